/**
 * The C layouts of DLPack 1.3 for x86-64 and AArch64 Linux, one class per C struct, with offsets
 * derived from the layouts. This is the raw ABI for code that reads or writes the structs itself
 * (the Python bridge, a native binding); everyday code uses {@link io.github.dlpack4j.Dlpack} and
 * {@link io.github.dlpack4j.ManagedTensor} instead.
 */
package io.github.dlpack4j.abi;
