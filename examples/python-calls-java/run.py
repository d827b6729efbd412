"""A Python program that starts the JVM through the dlpack4j package and calls Java on NumPy arrays."""

import sys
from pathlib import Path

import dlpack4j
import jpype
import numpy as np

jar = Path(__file__).parent / "target" / "python-calls-java-1.0.jar"
dlpack4j.start_jvm(classpath=[jar])  # the JVM, with dlpack4j's jars from the wheel and this example's
Stats = jpype.JClass("example.Stats")

x = np.arange(12.0).reshape(4, 3)
print("numpy array at", hex(x.ctypes.data), "Java sees it at", hex(Stats.address(x)))  # zero-copy, in

means = Stats.columnMeans(x)  # a Java Tensor
m = np.from_dlpack(means)  # NumPy over Java's memory, zero-copy, out
print("column means", m, "at", hex(m.ctypes.data), "Java tensor at", hex(means.dataPointer()))

Stats.scaleInPlace(x, 10.0)  # Java writes into NumPy's memory
print("after scaleInPlace", x[3].tolist())

with dlpack4j.to_java(np.ones((2, 2), np.float32)) as t:  # an explicit import, closed at the end
    print("explicit import", t)

ok = np.allclose(m, [4.5, 5.5, 6.5]) and x[3].tolist() == [90.0, 100.0, 110.0]
print("OK" if ok else "WRONG")
sys.exit(0 if ok else 1)
