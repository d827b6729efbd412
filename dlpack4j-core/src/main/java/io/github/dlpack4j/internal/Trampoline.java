package io.github.dlpack4j.internal;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A C function pointer into Java that stays a valid function for the life of the process, also
 * after the JVM is gone. C code may call a function that dlpack4j handed it (a DLPack deleter, a
 * capsule destructor, a Python type slot) at any time: after a Python host destroyed the JVM, or
 * from a native exit handler after the JVM's exit. An FFM upcall stub called then kills the
 * process ({@code UpcallLinker} cannot attach the thread), and changing what a struct says is not
 * enough: a consumer may keep the pointer it was given, or call the struct's deleter without
 * checking it (jaxlib checks it for NULL only when it imports), and a capsule keeps its destructor.
 * Not API: for dlpack4j's own modules.
 *
 * <h2>How</h2>
 * The pointer handed to C is a trampoline: a few machine instructions in memory of dlpack4j's own,
 * mapped with {@code mmap}, written, then made read+execute with {@code mprotect} (never writable
 * and executable at once). It loads the upcall stub's address from a word in a separate read-write
 * page and jumps to it, a tail jump that leaves the C arguments, the stack and the return address
 * exactly as the caller made them, so the stub runs as if called directly; when the word is 0 it
 * returns a fixed result instead, without touching the JVM. {@link #disarm()} writes that 0. Nothing
 * ever unmaps these pages, so the pointer outlives the JVM; what the Java side would have released
 * (an export's memory, say) is leaked to the process's end once the trampoline is off.
 * <ul>
 *   <li>A {@linkplain #release release} function (a deleter, a destructor, a finalizer: it lets go of
 *       something, returns nothing) is disarmed when the JVM begins to shut down, by a shutdown hook:
 *       from then on the worst a call can do is leak.</li>
 *   <li>Every other {@linkplain #call function} stays armed through the JVM's shutdown, so that code
 *       run then (a shutdown hook calling Python that calls Java) still works, and is disarmed by
 *       {@link #disarmAll()}, which a host that destroys the JVM and lives on (Python under JPype)
 *       calls first.</li>
 * </ul>
 * Trampolines are made on Linux x86-64 ({@link #outlivesTheJvm()}); elsewhere, or with
 * {@code -Ddlpack4j.trampolines=false}, or where the system refuses executable memory, the pointer is
 * the upcall stub itself, as JVM upcalls are, and disarming does nothing.
 */
public final class Trampoline {
    /** The x86-64 page size: what {@code mprotect} works in. */
    private static final int PAGE = 4096;
    /** Bytes of code per trampoline (the code takes 35; the rest is {@code int3}). */
    private static final int CODE_SLOT = 64;
    /** Bytes of data per trampoline: the stub's address (0: off), then the result when off. */
    private static final int WORDS_SLOT = 16;
    private static final int PER_PAGE = PAGE / CODE_SLOT;
    private static final int PROT_READ = 1;
    private static final int PROT_WRITE = 2;
    private static final int PROT_EXEC = 4;
    private static final int MAP_PRIVATE = 2;
    private static final int MAP_ANONYMOUS = 0x20;
    private static final long MAP_FAILED = -1;
    private static final VarHandle WORD = JAVA_LONG.varHandle();

    private static final List<Trampoline> RELEASES = new CopyOnWriteArrayList<>();
    private static final List<Trampoline> CALLS = new CopyOnWriteArrayList<>();
    private static volatile boolean releasesOff;
    private static volatile boolean callsOff;
    /** The code and words pages being filled, and how many of their slots are taken; guarded by the class. */
    private static MemorySegment codePage;
    private static MemorySegment wordsPage;
    private static int taken;
    /** Whether trampolines are made here: decided once, with the first pages mapped. */
    private static final boolean MADE;

    static {
        boolean made = false;
        if (System.getProperty("os.name", "").startsWith("Linux")
                && System.getProperty("os.arch", "").equals("amd64")
                && !"false".equals(System.getProperty("dlpack4j.trampolines"))) {
            try {
                mapPages();
                made = true;
            } catch (IllegalStateException refused) {
                System.err.println("dlpack4j: " + refused.getMessage() + "; C consumers that call a deleter "
                        + "after the JVM is gone will crash the process");
            }
        }
        MADE = made;
        if (made) {
            try {
                Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().name("dlpack4j-trampolines")
                        .unstarted(Trampoline::disarmReleases));
            } catch (IllegalStateException shuttingDown) {
                releasesOff = true; // first used while the JVM shuts down: its releases are off already
            }
        }
    }

    /** What C calls: the trampoline, or the upcall stub where there are none. */
    private final MemorySegment address;
    /** This trampoline's two words; null where there are no trampolines. */
    private final MemorySegment words;

    private Trampoline(MemorySegment address, MemorySegment words) {
        this.address = address;
        this.words = words;
    }

    /**
     * A function that lets go of something (a deleter, a destructor, a finalizer), off from the JVM's
     * shutdown on: when off, it returns at once and what it would have released is leaked.
     *
     * @param target   the Java method (static, catching everything: nothing may reach C)
     * @param function its C signature, without a result
     * @return the trampoline, armed
     */
    public static Trampoline release(MethodHandle target, FunctionDescriptor function) {
        if (function.returnLayout().isPresent()) {
            throw new IllegalArgumentException("a release function returns nothing: " + function);
        }
        return make(target, function, 0, true);
    }

    /**
     * Any other function called from C, off once {@link #disarmAll()} ran: when off, it returns
     * {@code resultWhenOff} at once (the low 32 bits for an {@code int} result; 0 for a pointer is NULL).
     *
     * @param target        the Java method (static, catching everything: nothing may reach C)
     * @param function      its C signature, with an integer or pointer result or none (the result
     *                      when off is returned where those go, not where a floating-point one would)
     * @param resultWhenOff what a call returns when off, in the C convention for an error where there
     *                      is one: NULL for a Python object, -1 for a status
     * @return the trampoline, armed
     */
    public static Trampoline call(MethodHandle target, FunctionDescriptor function, long resultWhenOff) {
        if (function.returnLayout().filter(r -> !(r instanceof ValueLayout v) || v.carrier() == float.class
                || v.carrier() == double.class).isPresent()) {
            throw new IllegalArgumentException("a trampoline returns an integer or a pointer when off, not the result of "
                    + function);
        }
        return make(target, function, resultWhenOff, false);
    }

    private static Trampoline make(MethodHandle target, FunctionDescriptor function, long resultWhenOff, boolean release) {
        // The stub lives for the process (the global arena), as any pointer handed to C must.
        MemorySegment stub = Linker.nativeLinker().upcallStub(target, function, Arena.global());
        if (!MADE) {
            return new Trampoline(stub, null);
        }
        Trampoline t = claimSlot();
        t.words.set(JAVA_LONG, 8, resultWhenOff);
        WORD.setVolatile(t.words, 0L, stub.address());
        // Listed before the flag is read, and the disarming methods raise the flag before they read
        // the list: a trampoline made while they run is disarmed by one of the two.
        (release ? RELEASES : CALLS).add(t);
        if (callsOff || (release && releasesOff)) {
            t.disarm();
        }
        return t;
    }

    /** The next free trampoline, on new pages when these are full. */
    private static synchronized Trampoline claimSlot() {
        if (taken == PER_PAGE) {
            mapPages();
        }
        int i = taken++;
        return new Trampoline(codePage.asSlice((long) i * CODE_SLOT, CODE_SLOT),
                wordsPage.asSlice((long) i * WORDS_SLOT, WORDS_SLOT));
    }

    /**
     * Maps a code page and a words page, writes every trampoline of the code page, each bound to its
     * slot of the words page (all 0: off until claimed), and makes the code page read+execute.
     *
     * @throws IllegalStateException if the system refuses the mapping or the protection
     */
    private static void mapPages() {
        long base = Libc.mmap(2L * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
        // Sound: mmap gave these two pages to nobody else, and nothing ever unmaps them.
        MemorySegment pages = MemorySegment.ofAddress(base).reinterpret(2L * PAGE);
        MemorySegment code = pages.asSlice(0, PAGE);
        MemorySegment words = pages.asSlice(PAGE, PAGE);
        for (int i = 0; i < PER_PAGE; i++) {
            writeCode(code.asSlice((long) i * CODE_SLOT, CODE_SLOT), words.address() + (long) i * WORDS_SLOT);
        }
        // Written while writable and not executable; from here on executable and never writable again.
        // No trampoline of the page is handed out before this (claimSlot runs after mapPages returns).
        Libc.mprotect(code.address(), PAGE, PROT_READ | PROT_EXEC);
        codePage = code;
        wordsPage = words;
        taken = 0;
    }

    /**
     * One trampoline reading the words at {@code words}:
     * <pre>
     *   movabs r11, words        ; r11: scratch in the C ABI, never an argument
     *   mov    r11, [r11]        ; the stub's address, read once
     *   test   r11, r11
     *   jz     off
     *   jmp    r11               ; tail jump: arguments, stack and return address as the caller left them
     * off:
     *   movabs rax, words + 8
     *   mov    rax, [rax]        ; the result when off
     *   ret
     * </pre>
     */
    private static void writeCode(MemorySegment slot, long words) {
        slot.fill((byte) 0xCC); // int3 after the code: a jump into the padding traps
        int at = put(slot, 0, 0x49, 0xBB);         // movabs r11, imm64
        at = putWord(slot, at, words);
        at = put(slot, at, 0x4D, 0x8B, 0x1B);      // mov r11, [r11]
        at = put(slot, at, 0x4D, 0x85, 0xDB);      // test r11, r11
        at = put(slot, at, 0x74, 0x03);            // jz off (over the next 3 bytes)
        at = put(slot, at, 0x41, 0xFF, 0xE3);      // jmp r11
        at = put(slot, at, 0x48, 0xB8);            // off: movabs rax, imm64
        at = putWord(slot, at, words + 8);
        put(slot, at, 0x48, 0x8B, 0x00, 0xC3);     // mov rax, [rax]; ret
    }

    private static int put(MemorySegment slot, int at, int... bytes) {
        for (int b : bytes) {
            slot.set(JAVA_BYTE, at++, (byte) b);
        }
        return at;
    }

    /** An instruction's 64-bit immediate, little-endian, wherever the instruction puts it. */
    private static int putWord(MemorySegment slot, int at, long value) {
        slot.set(JAVA_LONG_UNALIGNED, at, value);
        return at + 8;
    }

    /** {@return the function pointer to hand to C} */
    public MemorySegment address() {
        return address;
    }

    /**
     * Turns this trampoline off for good: calls that begin from now on return its result when off
     * without reaching Java (a call already past the check completes normally). Does nothing where
     * there are no trampolines.
     */
    public void disarm() {
        if (words != null) {
            WORD.setVolatile(words, 0L, 0L);
        }
    }

    /**
     * Turns every trampoline off for good, those made later included: for a host that is about to
     * destroy the JVM and outlive it. Where there are no trampolines this does nothing, and the
     * caller must keep C from calling into the JVM by other means.
     *
     * @return how many trampolines were made so far
     */
    public static int disarmAll() {
        callsOff = true;
        disarmReleases();
        CALLS.forEach(Trampoline::disarm);
        return RELEASES.size() + CALLS.size();
    }

    /** The shutdown hook's work: every release function off, those made later included. */
    private static void disarmReleases() {
        releasesOff = true;
        RELEASES.forEach(Trampoline::disarm);
    }

    /**
     * {@return whether functions made here stay callable after the JVM is gone} True on Linux x86-64
     * unless {@code -Ddlpack4j.trampolines=false} or the system refused executable memory.
     */
    public static boolean outlivesTheJvm() {
        return MADE;
    }

    /** {@code mmap} and {@code mprotect} of the C library, with {@code errno} for the message; made on first use. */
    private static final class Libc {
        private static final Linker LINKER = Linker.nativeLinker();
        private static final StructLayout STATE = Linker.Option.captureStateLayout();
        private static final VarHandle ERRNO = STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
        private static final MethodHandle MMAP = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("mmap"),
                FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG),
                Linker.Option.captureCallState("errno"));
        private static final MethodHandle MPROTECT = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("mprotect"),
                FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_INT), Linker.Option.captureCallState("errno"));

        /** A new private anonymous mapping of {@code size} bytes; its address. */
        static long mmap(long size, int prot, int flags) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment state = arena.allocate(STATE);
                long p = (long) MMAP.invokeExact(state, 0L, size, prot, flags, -1, 0L);
                if (p == MAP_FAILED) {
                    throw new IllegalStateException("mmap of " + size + " bytes for trampolines failed: errno "
                            + (int) ERRNO.get(state, 0L));
                }
                return p;
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new AssertionError(t);
            }
        }

        static void mprotect(long address, long size, int prot) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment state = arena.allocate(STATE);
                if ((int) MPROTECT.invokeExact(state, address, size, prot) != 0) {
                    throw new IllegalStateException("the system refused to make trampolines executable (mprotect: errno "
                            + (int) ERRNO.get(state, 0L) + ")");
                }
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new AssertionError(t);
            }
        }
    }
}
