"""Python hosts the JVM (JPype) and Java attaches to this interpreter: run by AttachTest.

usage: python3 attach_from_jpype.py LIBJVM CLASSPATH atexit|explicit
"""
import sys

import jpype

jpype.startJVM(sys.argv[1], "-Djava.class.path=/usr/share/java/org.jpype.jar:" + sys.argv[2],
               "--enable-native-access=ALL-UNNAMED",
               convertStrings=True)
marker = [41]
probe = jpype.JClass("io.github.dlpack4j.python.AttachProbe")
print("RESULT", probe.run())
print("MARKER", marker[0])
# Exit with a Java tensor object, a NumPy array over Java memory and a Java function
# still alive: JPype destroys the JVM at exit, before Python frees them.
probe.leaveExportsToTheHost()
if sys.argv[3] == "explicit":
    # The JVM goes first, by the program's own call; Python goes on with Java memory.
    jpype.shutdownJVM()
    print("AFTER SHUTDOWN", consumed.sum(), flush=True)
