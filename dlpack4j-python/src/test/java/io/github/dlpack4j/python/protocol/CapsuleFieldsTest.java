package io.github.dlpack4j.python.protocol;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.dlpack4j.python.Python;
import io.github.dlpack4j.python.interpreter.Gil;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The capsule fields read in place on the import route: found where the C API puts them on this
 * interpreter, and capsule names compared exactly as {@code strcmp} would, at every alignment.
 */
class CapsuleFieldsTest {
    static final Python PY = Python.start();

    @Test
    void theFieldsAreWhereTheCApiPutsThemOnThisInterpreter() {
        assertThat(Gil.with(() -> CapsuleFields.USABLE)).isTrue();
    }

    /** Names that must not match, next to the two that must: prefixes, extensions, one byte off, used names. */
    @ParameterizedTest
    @ValueSource(strings = {"", "d", "dltenso", "dltensor_", "dltensor_versione", "dltensor_versioned_", "dltensor_versionee",
            "Dltensor", "dltensoR", "used_dltensor", "used_dltensor_versioned", "xdltensor", "dltensor\u0001"})
    void namesMatchExactlyAtEveryAlignment(String other) {
        for (int shift = 0; shift < 8; shift++) {
            try (Arena arena = Arena.ofConfined()) {
                assertThat(CapsuleFields.CName.VERSIONED.matches(cString(arena, "dltensor_versioned", shift))).isTrue();
                assertThat(CapsuleFields.CName.LEGACY.matches(cString(arena, "dltensor", shift))).isTrue();
                assertThat(CapsuleFields.CName.VERSIONED.matches(cString(arena, "dltensor", shift))).isFalse();
                assertThat(CapsuleFields.CName.LEGACY.matches(cString(arena, "dltensor_versioned", shift))).isFalse();
                long o = cString(arena, other, shift);
                assertThat(CapsuleFields.CName.VERSIONED.matches(o)).as("'%s' at +%d", other, shift).isFalse();
                assertThat(CapsuleFields.CName.LEGACY.matches(o)).as("'%s' at +%d", other, shift).isFalse();
            }
        }
    }

    @Test
    void noNameIsNoneOfOurs() {
        assertThat(CapsuleFields.CName.VERSIONED.matches(0)).isFalse();
        assertThat(CapsuleFields.CName.LEGACY.matches(0)).isFalse();
    }

    /** {@code s} and its NUL at {@code shift} bytes past an 8-byte boundary, with garbage around it. */
    private static long cString(Arena arena, String s, int shift) {
        byte[] b = s.getBytes(StandardCharsets.US_ASCII);
        MemorySegment m = arena.allocate(b.length + 32, 8);
        m.fill((byte) 'd');
        MemorySegment.copy(b, 0, m, java.lang.foreign.ValueLayout.JAVA_BYTE, shift, b.length);
        m.set(java.lang.foreign.ValueLayout.JAVA_BYTE, shift + b.length, (byte) 0);
        return m.address() + shift;
    }
}
