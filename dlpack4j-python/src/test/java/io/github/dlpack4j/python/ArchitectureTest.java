package io.github.dlpack4j.python;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.belongToAnyOf;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAPackage;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.resideInAnyPackage;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchRule;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.archfixture.api.Handle;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.net.URISyntaxException;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The architecture of dlpack4j-python, as rules: the public API in {@code io.github.dlpack4j.python}
 * (the only exported package, public types only), the embedded interpreter in
 * {@code ...python.interpreter}, which knows nothing of DLPack, and the DLPack Python protocol in
 * {@code ...python.protocol}, which uses the interpreter. That the protocol reaches the interpreter
 * only through what it offers is the compiler's to enforce: the packages are distinct, so only
 * public members cross. Each rule is also shown to fail on a deliberate violation in
 * {@code archfixture}, a tree of the test's own shaped like the module.
 */
class ArchitectureTest {
    /** A module's three packages, and the API types that belong to each side. */
    record Layout(String api, String interpreter, String protocol, Class<?>[] apiInterpreterTypes) {}

    static final Layout MODULE = new Layout("io.github.dlpack4j.python", "io.github.dlpack4j.python.interpreter",
            "io.github.dlpack4j.python.protocol",
            new Class<?>[] {PyObject.class, PythonException.class, PythonFunction.class});
    static final Layout FIXTURE = new Layout("io.github.dlpack4j.python.archfixture.api",
            "io.github.dlpack4j.python.archfixture.interpreter", "io.github.dlpack4j.python.archfixture.protocol",
            new Class<?>[] {Handle.class});

    static final JavaClasses CODE = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("io.github.dlpack4j.python");
    static final JavaClasses FIXTURES = new ClassFileImporter().importPackages("io.github.dlpack4j.python.archfixture");

    static ArchRule interpreterUsesNoProtocolPackage(Layout l) {
        return noClasses().that().resideInAPackage(l.interpreter())
                .should().dependOnClassesThat().resideInAPackage(l.protocol() + "..")
                .as("the interpreter package uses nothing of the protocol package");
    }

    static ArchRule interpreterKnowsNothingOfDlpack(Layout l) {
        return noClasses().that().resideInAPackage(l.interpreter())
                .should().dependOnClassesThat(resideInAnyPackage("io.github.dlpack4j", "io.github.dlpack4j.abi"))
                .as("the interpreter package uses no DLPack type of core (io.github.dlpack4j, io.github.dlpack4j.abi)");
    }

    static ArchRule interpreterUsesOnlyTheApisInterpreterTypes(Layout l) {
        return noClasses().that().resideInAPackage(l.interpreter())
                .should().dependOnClassesThat(protocolTypeOfTheApi(l))
                .as("the interpreter package uses no protocol type of the API (only its interpreter types)");
    }

    /** A class of the API package (or an array of one) other than its interpreter types. */
    static DescribedPredicate<JavaClass> protocolTypeOfTheApi(Layout l) {
        DescribedPredicate<JavaClass> apiType = resideInAPackage(l.api()).and(not(belongToAnyOf(l.apiInterpreterTypes())));
        return DescribedPredicate.describe("a protocol type of " + l.api(),
                c -> apiType.test(c.isArray() ? c.getBaseComponentType() : c));
    }

    static ArchRule apiPackageHoldsPublicTypesOnly(Layout l) {
        return classes().that().resideInAPackage(l.api()).and().areTopLevelClasses()
                .should().bePublic()
                .as("the API package holds public types only (internals live in the non-exported packages)");
    }

    @Test
    void theInterpreterPackageUsesNothingOfTheProtocolPackage() {
        interpreterUsesNoProtocolPackage(MODULE).check(CODE);
        assertThatThrownBy(() -> interpreterUsesNoProtocolPackage(FIXTURE).check(FIXTURES))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("ReachesIntoProtocol")
                .hasMessageNotContaining("Clean");
    }

    @Test
    void theInterpreterPackageUsesNoDlpackTypeOfCore() {
        interpreterKnowsNothingOfDlpack(MODULE).check(CODE);
        assertThatThrownBy(() -> interpreterKnowsNothingOfDlpack(FIXTURE).check(FIXTURES))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("KnowsTensors")
                .hasMessageNotContaining("Clean");
    }

    @Test
    void theInterpreterPackageUsesOnlyTheInterpreterTypesOfTheApi() {
        interpreterUsesOnlyTheApisInterpreterTypes(MODULE).check(CODE);
        assertThatThrownBy(() -> interpreterUsesOnlyTheApisInterpreterTypes(FIXTURE).check(FIXTURES))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("KnowsImportThing")
                .hasMessageNotContaining("Clean");
    }

    @Test
    void theApiPackageHoldsPublicTypesOnly() {
        apiPackageHoldsPublicTypesOnly(MODULE).check(CODE);
        assertThatThrownBy(() -> apiPackageHoldsPublicTypesOnly(FIXTURE).check(FIXTURES))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("HiddenHelper")
                .hasMessageNotContaining("ImportThing");
    }

    @Test
    void theRulesSeeTheModulesClasses() {
        assertThat(CODE.containPackage(MODULE.interpreter())).isTrue();
        assertThat(CODE.containPackage(MODULE.protocol())).isTrue();
        assertThat(CODE.contain("io.github.dlpack4j.python.interpreter.Gil")).isTrue();
        assertThat(CODE.contain(ArchitectureTest.class)).as("tests are not part of the code checked").isFalse();
    }

    // ------------------------------------------------------------------ module-info

    /** Throws unless {@code m} exports exactly {@code open} to all and {@code qualified} to the modules named. */
    static void exportsExactly(ModuleDescriptor m, Set<String> open, Map<String, Set<String>> qualified) {
        Set<String> actualOpen = new TreeSet<>();
        Map<String, Set<String>> actualQualified = new TreeMap<>();
        for (ModuleDescriptor.Exports e : m.exports()) {
            if (e.isQualified()) {
                actualQualified.put(e.source(), new TreeSet<>(e.targets()));
            } else {
                actualOpen.add(e.source());
            }
        }
        if (!actualOpen.equals(new TreeSet<>(open)) || !actualQualified.equals(new TreeMap<>(qualified))) {
            throw new AssertionError("module " + m.name() + " exports " + actualOpen + " and, qualified, "
                    + actualQualified + "; the rule says " + new TreeSet<>(open) + " and " + new TreeMap<>(qualified));
        }
    }

    private static ModuleDescriptor moduleOf(Class<?> c) throws URISyntaxException {
        Path where = Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
        return ModuleFinder.of(where).findAll().stream().map(ModuleReference::descriptor).findFirst()
                .orElseThrow(() -> new AssertionError("no module-info at " + where));
    }

    @Test
    void thePythonModuleExportsItsPublicPackageOnly() throws Exception {
        ModuleDescriptor python = moduleOf(PyObject.class);
        assertThat(python.name()).isEqualTo("io.github.dlpack4j.python");
        exportsExactly(python, Set.of("io.github.dlpack4j.python"), Map.of());
        assertThat(python.opens()).isEmpty();

        ModuleDescriptor exportsItsInternals = ModuleDescriptor.newModule("fixture")
                .exports("fixture.api").exports("fixture.interpreter").build();
        assertThatThrownBy(() -> exportsExactly(exportsItsInternals, Set.of("fixture.api"), Map.of()))
                .isInstanceOf(AssertionError.class).hasMessageContaining("fixture.interpreter");
    }

    @Test
    void coreKeepsItsQualifiedExportOfItsInternals() throws Exception {
        ModuleDescriptor core = moduleOf(Tensor.class);
        exportsExactly(core, Set.of("io.github.dlpack4j", "io.github.dlpack4j.abi"), Map.of("io.github.dlpack4j.internal",
                Set.of("io.github.dlpack4j.python", "io.github.dlpack4j.arrow", "io.github.dlpack4j.onnxruntime",
                        "io.github.dlpack4j.model")));

        ModuleDescriptor opensItsInternals = ModuleDescriptor.newModule("fixture")
                .exports("fixture").exports("fixture.internal").build();
        assertThatThrownBy(() -> exportsExactly(opensItsInternals, Set.of("fixture"),
                Map.of("fixture.internal", Set.of("fixture.friend"))))
                .isInstanceOf(AssertionError.class).hasMessageContaining("fixture.internal");
    }
}
