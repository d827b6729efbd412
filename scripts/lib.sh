# Shared set-up for the project's scripts: finds a JDK 25 and a pinned Maven. Source it, don't run it.
# Every function here is idempotent: a second run finds what the first one installed.

DLPACK4J_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DLPACK4J_JDK_FALLBACK=/usr/lib/jvm/temurin-25-jdk-amd64
MAVEN_VERSION=3.9.11

die() { echo "dlpack4j: $*" >&2; exit 1; }
say() { echo "==> $*" >&2; }

java_major() { # prints the feature version of the JDK at $1, or nothing
  "$1/bin/java" -XshowSettings:properties -version 2>&1 |
    sed -n 's/^ *java\.specification\.version = \([0-9]*\).*/\1/p'
}

# JAVA_HOME if it is a JDK 25 or newer, else the Temurin 25 that this kind of machine ships.
ensure_jdk() {
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/javac" ] && [ "$(java_major "$JAVA_HOME")" -ge 25 ] 2>/dev/null; then
    :
  elif [ -x "$DLPACK4J_JDK_FALLBACK/bin/javac" ]; then
    export JAVA_HOME="$DLPACK4J_JDK_FALLBACK"
  else
    die "no JDK 25 found: JAVA_HOME is '${JAVA_HOME:-unset}' (${JAVA_HOME:+Java $(java_major "$JAVA_HOME")}) and $DLPACK4J_JDK_FALLBACK does not exist. Install a JDK 25 (e.g. Temurin 25) and point JAVA_HOME at it."
  fi
  export PATH="$JAVA_HOME/bin:$PATH"
}

# Maven's console library (jansi) writes a colour reset, ESC[0m, to stdout and to stderr of a
# terminal as Maven starts and exits, even with -B and -q: a quiet build leaves four of them before
# the next line the user reads. jansi.noreset drops them, and nothing else (errors are printed in
# full); it must be a JVM option (MAVEN_OPTS), as a -D argument comes too late for the first two.
DLPACK4J_MAVEN_OPTS="-Djansi.noreset=true"

# The Maven wrapper pins Maven $MAVEN_VERSION. Its distribution is taken from the local Maven
# repository, filled on first use by the machine's own Maven client (Debian's `maven`, installed
# if missing), so the wrapper needs no registry address of its own.
ensure_maven() {
  local repo="${MAVEN_LOCAL_REPO:-$HOME/.m2/repository}"
  local zip="$repo/org/apache/maven/apache-maven/$MAVEN_VERSION/apache-maven-$MAVEN_VERSION-bin.zip"
  if [ ! -f "$zip" ]; then
    if ! command -v mvn >/dev/null; then
      say "installing Debian's maven to fetch Maven $MAVEN_VERSION"
      command -v apt-get >/dev/null || die "neither mvn nor apt-get is available to fetch Maven $MAVEN_VERSION"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven unzip >/dev/null ||
        die "apt-get install maven failed"
    fi
    say "fetching Maven $MAVEN_VERSION into $repo"
    (cd "${TMPDIR:-/tmp}" && MAVEN_OPTS="--sun-misc-unsafe-memory-access=allow $DLPACK4J_MAVEN_OPTS" mvn -q -B org.apache.maven.plugins:maven-dependency-plugin:3.8.1:get \
      -Dmaven.repo.local="$repo" -Dartifact="org.apache.maven:apache-maven:$MAVEN_VERSION:zip:bin" -Dtransitive=false) ||
      die "could not fetch org.apache.maven:apache-maven:$MAVEN_VERSION from Maven Central"
  fi
  command -v unzip >/dev/null || { apt-get update -qq && apt-get install -y -qq unzip >/dev/null; } ||
    die "the Maven wrapper needs unzip"
  export MVNW_REPOURL="file://$repo"
  # wget cannot read file: URLs; with credentials set the wrapper falls back to its Java
  # downloader, which can. They are sent nowhere.
  export MVNW_USERNAME=local MVNW_PASSWORD=local
}

# Every build, the examples' included, uses MAVEN_LOCAL_REPO when it is set.
mvnw() {
  ensure_jdk
  ensure_maven
  (cd "$DLPACK4J_ROOT" && MAVEN_OPTS="$DLPACK4J_MAVEN_OPTS${MAVEN_OPTS:+ $MAVEN_OPTS}" \
    ./mvnw -B -ntp ${MAVEN_LOCAL_REPO:+-Dmaven.repo.local="$MAVEN_LOCAL_REPO"} "$@")
}

# PYTHON -m pip ARGS..., with pip's stderr shown as it comes but for two kinds of line. A machine's
# pip configuration may name extra index folders (file: URLs); for each package one of them lacks,
# pip warns "Location 'file:///.../simple/NAME/' is ignored: it is neither a file nor a directory",
# some 25 lines a venv. And where one configured index's host cannot be resolved (a machine that
# reaches only its local indexes), pip warns "Retrying (...) after connection broken by
# '...Name or service not known'" once per package. Each kind is counted, and one line says so;
# everything else, pip's real errors included, is shown in full, and pip's exit status is returned.
run_pip() { # run_pip PYTHON PIP_ARGUMENT...
  local py="$1"
  local located="pip: %d lines 'Location ... is ignored' from this machine's pip configuration (an extra index folder without that package) were hidden\n"
  local unresolved="pip: %d lines 'Retrying ... Name or service not known' (an index host this machine cannot resolve; pip went on with the other configured indexes) were hidden\n"
  shift
  # pip's stderr goes through the filter, its stdout (fd 3) as it is; its status is returned, with
  # or without pipefail. Only these two kinds of noise are hidden, each counted in one line.
  { "$py" -m pip "$@" 2>&1 >&3 3>&- |
      awk -v located="$located" -v unresolved="$unresolved" \
        '/^WARNING: Location .* is ignored: it is neither a file nor a directory/ { n++; next }
         /^WARNING: Retrying .*Failed to establish a new connection: .*Name or service not known/ { r++; next }
         { print; fflush() }
         END { if (n) printf located, n; if (r) printf unresolved, r }' >&2 3>&-
    return "${PIPESTATUS[0]}"
  } 3>&1
}

# The project's Python environments, made from pip's configured index:
#   .venv         the modern peers (numpy 2.4.6, torch 2.13 CPU, jax 0.10.2, ml_dtypes, pytest)
#   .venv-legacy  a producer that rejects max_version (numpy 1.26.4)
# Each is rebuilt only when its requirements file changed (a stamp records the one installed).
DLPACK4J_PYTHON_BASE="${DLPACK4J_PYTHON_BASE:-python3}"

ensure_venv() { # ensure_venv DIR REQUIREMENTS [BASE_PYTHON [VENV_OPTION...]]
  local dir="$DLPACK4J_ROOT/$1" req="$DLPACK4J_ROOT/$2" name="$2" base="${3:-$DLPACK4J_PYTHON_BASE}"
  shift $(( $# < 3 ? $# : 3 ))
  local stamp="$dir/.dlpack4j-requirements"
  if [ -x "$dir/bin/python" ] && cmp -s "$req" "$stamp"; then
    return
  fi
  command -v "$base" >/dev/null || die "no $base to create ${dir##*/} with"
  if [ "$base" = "$DLPACK4J_PYTHON_BASE" ]; then
    "$base" -c 'import sysconfig, sys; sys.exit(0 if sysconfig.get_config_var("Py_ENABLE_SHARED") else 1)' ||
      die "$base was built without a shared libpython, which embedding needs; use a Python built with --enable-shared"
  fi
  say "creating ${dir##*/} from $name"
  rm -rf "$dir"
  "$base" -m venv "$@" "$dir"
  run_pip "$dir/bin/python" install -q --retries 1 -r "$req" || die "pip install -r $name failed"
  cp "$req" "$stamp"
}

# Debian packages, installed with apt-get when missing (needs root, as CI and these machines have).
ensure_debian_packages() {
  local missing=() p
  for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return
  [ "$(id -u)" = 0 ] || die "missing Debian packages: ${missing[*]}; install them with: sudo apt-get install ${missing[*]}"
  say "installing Debian packages: ${missing[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
    die "apt-get install ${missing[*]} failed"
}

ensure_python_envs() {
  ensure_venv .venv python/requirements.txt
  ensure_venv .venv-legacy python/requirements-legacy.txt
  ensure_jpype_venv
  # Python hosting the JVM: Debian's python3 with JPype (AttachTest).
  ensure_debian_packages python3 python3-jpype python3-venv gcc   # gcc: AbiMatchesTheCHeaderTest compiles against dlpack.h
  # ... and against Python.h: a Debian base Python keeps its headers in python3-dev.
  local inc
  inc="$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
  [ -f "$inc/Python.h" ] || ensure_debian_packages python3-dev
}

# The serve-torch example's environment (examples/serve-torch): torch, torchvision, FastAPI and
# uvicorn[standard], for the Java service's embedded interpreter and the FastAPI comparison alike.
ensure_serve_venv() {
  ensure_venv .venv-serve examples/serve-torch/python/requirements.txt
}

# examples/serve-protocol, the serving examples' protocol code without a web framework (and its test
# jar), into the local Maven repository, where serve-torch and spring-boot-torch find it by
# coordinates: when it is missing there or older than its sources, or always with --always.
install_serve_protocol() {
  local dir="$DLPACK4J_ROOT/examples/serve-protocol"
  local jar="${MAVEN_LOCAL_REPO:-$HOME/.m2/repository}/example/serve-protocol/1.0/serve-protocol-1.0.jar"
  if [ "${1:-}" = --always ] || [ ! -f "$jar" ] || [ -n "$(find "$dir/src" "$dir/pom.xml" \
       "$DLPACK4J_ROOT/examples/serve-torch/python/serve_models.py" -newer "$jar" -print -quit)" ]; then
    say "installing examples/serve-protocol"
    mvnw -q -f "$dir/pom.xml" install -DskipTests >&2 || die "installing examples/serve-protocol failed"
  fi
}

# wrk, the load generator of scripts/loadtest (Debian's package).
ensure_wrk() {
  command -v wrk >/dev/null || ensure_debian_packages wrk
}

# Python hosting the JVM (the `dlpack4j` Python package, python/): Debian's python3 and its JPype
# (the registries here serve no JPype1), in a venv that sees them (--system-site-packages) and takes
# the modern peers from pip's index.
ensure_jpype_venv() {
  ensure_debian_packages python3 python3-jpype python3-venv
  ensure_venv .venv-jpype python/requirements-jpype.txt /usr/bin/python3 --system-site-packages
}

# The library modules of the reactor, in the root POM's order: the published ones, each with sources
# and Javadoc (the command and the benchmarks set maven.deploy.skip).
library_modules() {
  local m
  for m in $(sed -n 's|^ *<module>\(.*\)</module>.*|\1|p' "$DLPACK4J_ROOT/pom.xml"); do
    grep -q '<maven.deploy.skip>true</maven.deploy.skip>' "$DLPACK4J_ROOT/$m/pom.xml" || echo "$m"
  done
}

# Removes dlpack4j's artifacts from the local Maven repository, so that the examples are built
# against a fresh install.
remove_installed_artifacts() {
  rm -rf "${MAVEN_LOCAL_REPO:-$HOME/.m2/repository}/io/github/dlpack4j"
}

# The Maven project's version, e.g. 0.1.0-SNAPSHOT (the parent POM's own <version>).
project_version() {
  sed -n '/<artifactId>dlpack4j-parent<\/artifactId>/{n;s/.*<version>\(.*\)<\/version>.*/\1/p;q}' "$DLPACK4J_ROOT/pom.xml"
}

# Packs the jars in dlpack4j-*/target into python/dist/dlpack4j-*.whl; prints the wheel's path. A
# wheel newer than the jars and the package's sources is kept (scripts/test packs once, for pytest
# and the examples).
build_wheel() {
  local version jars="$DLPACK4J_ROOT/python/src/dlpack4j/jars" m wheel
  version="$(project_version)"
  [ -n "$version" ] || die "could not read the project version from pom.xml"
  wheel="$(newest_wheel)"
  if [ -n "$wheel" ] && [ -z "$(find "$DLPACK4J_ROOT"/dlpack4j-{core,python}/target/dlpack4j-{core,python}-"$version".jar \
       "$DLPACK4J_ROOT/python/src" "$DLPACK4J_ROOT/python/pyproject.toml" "$DLPACK4J_ROOT/python/README.md" \
       -newer "$wheel" -not -path "*/jars/*" -not -name "__pycache__" -not -path "*/__pycache__/*" -print -quit 2>/dev/null)" ]; then
    echo "$wheel"
    return
  fi
  rm -rf "$jars" "$DLPACK4J_ROOT/python/dist" "$DLPACK4J_ROOT/python/build"
  mkdir -p "$jars"
  for m in dlpack4j-core dlpack4j-python; do
    [ -f "$DLPACK4J_ROOT/$m/target/$m-$version.jar" ] || die "$m/target/$m-$version.jar is missing: run scripts/wheel without --no-build"
    cp "$DLPACK4J_ROOT/$m/target/$m-$version.jar" "$jars/"
  done
  say "building the dlpack4j wheel"
  run_pip "$DLPACK4J_PYTHON_BASE" wheel -q --no-deps --retries 1 -w "$DLPACK4J_ROOT/python/dist" "$DLPACK4J_ROOT/python" >&2 ||
    die "building the wheel failed"
  wheel="$(newest_wheel)"
  [ -n "$wheel" ] || die "pip wheel wrote no dlpack4j-*.whl into python/dist"
  echo "$wheel"
}

# The wheel in python/dist, or nothing when there is none yet (a fresh clone).
newest_wheel() {
  local w
  for w in "$DLPACK4J_ROOT"/python/dist/dlpack4j-*.whl; do
    [ -f "$w" ] && echo "$w" && return
  done
  return 0
}

# The CPython minor versions dlpack4j supports; each is tested (python/pyproject.toml's classifiers
# list the same).
DLPACK4J_CPYTHON_VERSIONS="3.10 3.11 3.12 3.13"

# The embedded runtime's `any-cpython` tests (JUnit tag: no numpy or torch needed; DLPack both ways
# with ctypes peers) on each supported CPython present: the executables in DLPACK4J_CPYTHONS
# (space-separated) if set, else the newest pyenv build of each version in DLPACK4J_CPYTHON_VERSIONS.
# Prints one line per version; a missing one is skipped, a failing one fails (after all ran). Needs
# the reactor built and installed (mvnw install) first.
run_any_cpython_tests() {
  local pythons=() lines=() failed=0 minor py found label log tests start
  if [ -n "${DLPACK4J_CPYTHONS:-}" ]; then
    read -r -a pythons <<<"$DLPACK4J_CPYTHONS"
  else
    for minor in $DLPACK4J_CPYTHON_VERSIONS; do
      found="$(find "${PYENV_ROOT:-$HOME/.pyenv}/versions" -maxdepth 1 -regex ".*/${minor//./\\.}\\.[0-9]+" 2>/dev/null | sort -V | tail -n 1)"
      if [ -n "$found" ] && [ -x "$found/bin/python" ]; then
        pythons+=("$found/bin/python")
      else
        lines+=("CPython $minor: not present, skipped")
      fi
    done
  fi
  for py in "${pythons[@]}"; do
    [ -x "$py" ] || die "DLPACK4J_CPYTHONS names $py, which is not an executable"
    label="CPython $("$py" -c 'import platform; print(platform.python_version())' 2>/dev/null || echo "at $py")"
    if ! "$py" -c 'import sysconfig, sys; sys.exit(0 if sysconfig.get_config_var("Py_ENABLE_SHARED") else 1)' 2>/dev/null; then
      lines+=("$label ($py): no shared libpython to embed, skipped")
      continue
    fi
    say "any-cpython tests on $label ($py)"
    log="$(mktemp)"
    start=$SECONDS
    if mvnw -pl dlpack4j-python surefire:test -Dgroups=any-cpython -Ddlpack4j.python="$py" >"$log" 2>&1; then
      tests="$(sed -n 's/^\[INFO\] Tests run: \([0-9]*\), Failures: 0, Errors: 0, Skipped: 0$/\1/p' "$log" | tail -n 1)"
      lines+=("$label: ${tests:-?} tests passed ($((SECONDS - start)) s)")
    else
      tail -n 60 "$log" >&2
      lines+=("$label: FAILED ($((SECONDS - start)) s)")
      failed=1
    fi
    rm -f "$log"
  done
  printf '%s\n' "${lines[@]}" >&2
  [ "$failed" = 0 ] || die "the any-cpython tests failed on some CPython (see above)"
}

# The Python package's own suite: the wheel installed into .venv-jpype, ruff, then pytest.
run_python_tests() {
  local wheel
  ensure_jpype_venv
  wheel="$(build_wheel | tail -n 1)"
  "$DLPACK4J_ROOT/.venv-jpype/bin/python" -m pip install -q --no-deps --force-reinstall "$wheel" || die "installing $wheel failed"
  say "ruff (python/)"
  "$DLPACK4J_ROOT/.venv-jpype/bin/python" -m ruff check "$DLPACK4J_ROOT/python" || die "ruff found problems in python/"
  say "pytest (python/tests, against the installed wheel)"
  (cd "$DLPACK4J_ROOT/python" && JAVA_HOME="$JAVA_HOME" "$DLPACK4J_ROOT/.venv-jpype/bin/python" -m pytest -q "$@")
}
