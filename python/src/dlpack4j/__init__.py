"""dlpack4j for Python programs that host the JVM through JPype.

Zero-copy tensor exchange between Python and Java over DLPack, in both directions::

    import numpy as np
    import dlpack4j

    t = dlpack4j.to_java(np.arange(6.0))   # a Java io.github.dlpack4j.Tensor over NumPy's memory
    a = np.from_dlpack(t)                  # and back: Java tensors are DLPack producers
    t.close()                              # runs NumPy's deleter (so does leaving ``with t:``)

Java methods whose parameter is a ``Tensor`` take NumPy, PyTorch and JAX arrays directly. The JVM
starts on first use (:func:`start_jvm`), with the jars this package carries.
"""

from ._bridge import from_java, to_java
from ._jvm import JdkNotFoundError, find_jvm, jars, start_jvm

__all__ = ["JdkNotFoundError", "find_jvm", "from_java", "jars", "start_jvm", "to_java"]
__version__ = "0.1.0.dev0"
