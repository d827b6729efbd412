package io.github.dlpack4j.python;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.interpreter.Gil;
import io.github.dlpack4j.python.interpreter.PendingReleases;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

class GilScopeTest {
    static final Python PY = Python.start();

    /** {@code 6 * 7} evaluated on a fresh thread; fails the test if that does not finish within 10 s. */
    private static long evalOnAnotherThread() throws Exception {
        return CompletableFuture.supplyAsync(() -> {
            try (PyObject r = PY.eval("6 * 7")) {
                return r.asLong();
            }
        }, r -> Thread.ofPlatform().start(r)).get(10, TimeUnit.SECONDS);
    }

    @Test
    void everyKindOfCallWorksInsideAScopeAndTheGilIsHeldThroughout() {
        long sum = PY.withGil(() -> {
            assertThat(Gil.isHeld()).isTrue();
            PY.exec("import numpy as np\ndef square(x):\n    return x * x");
            long s = 0;
            try (PyObject square = PY.getGlobal("square"); PyObject np = PY.importModule("numpy")) {
                for (int i = 0; i < 100; i++) {
                    s += (Long) square.invoke(i);
                    try (PyObject r = square.call(i)) {
                        s += r.asLong();
                    }
                }
                try (PyObject a = np.callMethod("arange", 4.0); ManagedTensor m = PythonDlpack.fromDlpack(a)) {
                    s += (long) m.tensor().getDouble(3);
                }
                try (Tensor t = Tensor.of(new double[] {1, 2, 3}); PyObject obj = PythonDlpack.toPython(t);
                     PyObject view = np.callMethod("from_dlpack", obj); PyObject total = view.callMethod("sum")) {
                    s += (long) total.asDouble();
                }
            }
            assertThat(Gil.isHeld()).isTrue();
            return s;
        });
        assertThat(sum).isEqualTo(2 * 328_350 + 3 + 6);
        assertThat(Gil.isHeld()).as("GIL held after the scope").isFalse();
    }

    @Test
    @Tag("any-cpython")
    void nestedScopesKeepTheGilUntilTheOutermostEndsAndThenAnotherThreadGetsIt() throws Exception {
        PY.withGil(() -> {
            String inner = PY.withGil(() -> {
                assertThat(Gil.isHeld()).isTrue();
                return PY.withGil(() -> evalString("'deep'"));
            });
            assertThat(inner).isEqualTo("deep");
            assertThat(Gil.isHeld()).as("held after the inner scopes ended").isTrue();
            try (PyObject r = PY.eval("1 + 1")) {
                assertThat(r.asLong()).isEqualTo(2);
            }
        });
        assertThat(Gil.isHeld()).isFalse();
        assertThat(evalOnAnotherThread()).isEqualTo(42);
    }

    @Test
    @Tag("any-cpython")
    void anExceptionThrownThroughAScopeLeavesItWithTheGilReleased() throws Exception {
        assertThatThrownBy(() -> PY.withGil(() -> {
            PY.withGil(() -> {
                throw new IllegalArgumentException("thrown inside");
            });
        })).isInstanceOf(IllegalArgumentException.class).hasMessage("thrown inside");
        assertThat(Gil.isHeld()).isFalse();
        assertThat(evalOnAnotherThread()).isEqualTo(42);

        assertThatThrownBy(() -> PY.withGil(() -> PY.eval("1 / 0"))).isInstanceOf(PythonException.class)
                .hasMessageContaining("ZeroDivisionError");
        assertThat(Gil.isHeld()).isFalse();
        assertThat(evalOnAnotherThread()).isEqualTo(42);
    }

    @Test
    @Tag("any-cpython")
    void anotherThreadsCallsWaitForAScopeAndThenProceed() throws Exception {
        CountDownLatch inScope = new CountDownLatch(1);
        AtomicLong scopeEnded = new AtomicLong();
        Thread holder = Thread.ofPlatform().start(() -> PY.withGil(() -> {
            inScope.countDown();
            sleep(300); // Java work inside the scope: every other Python caller waits
            scopeEnded.set(System.nanoTime());
        }));
        assertThat(inScope.await(10, TimeUnit.SECONDS)).isTrue();
        long answer = evalOnAnotherThread();
        long answered = System.nanoTime();
        holder.join(10_000);
        assertThat(answer).isEqualTo(42);
        assertThat(scopeEnded.get()).as("the scope had ended when the other thread's call returned").isNotZero()
                .isLessThan(answered);
    }

    @Test
    @Tag("any-cpython")
    void allowThreadsInsideAScopeLetsASecondThreadRunPythonAndTakesTheGilBack() throws Exception {
        AtomicReference<Long> fromOther = new AtomicReference<>();
        PY.withGil(() -> {
            PY.exec("scope_value = 5");
            PY.allowThreads(() -> {
                assertThat(Gil.isHeld()).isFalse();
                try {
                    fromOther.set(evalOnAnotherThread()); // would time out if the GIL were still held
                    // dlpack4j calls in here take the GIL for themselves, nested scopes too
                    assertThat(PY.withGil(() -> evalLong("scope_value"))).isEqualTo(5);
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
                assertThat(Gil.isHeld()).isFalse();
            });
            assertThat(Gil.isHeld()).as("held again after allowThreads").isTrue();
            try (PyObject r = PY.eval("scope_value + 1")) {
                assertThat(r.asLong()).isEqualTo(6);
            }
        });
        assertThat(fromOther.get()).isEqualTo(42);
        assertThat(Gil.isHeld()).isFalse();
        assertThat(evalOnAnotherThread()).isEqualTo(42);
    }

    @Test
    @Tag("any-cpython")
    void allowThreadsTakesTheGilBackEvenWhenItsBodyThrows() throws Exception {
        PY.withGil(() -> {
            assertThatThrownBy(() -> PY.allowThreads(() -> {
                throw new IllegalStateException("inside allowThreads");
            })).hasMessage("inside allowThreads");
            assertThat(Gil.isHeld()).isTrue();
            try (PyObject r = PY.eval("2 + 2")) {
                assertThat(r.asLong()).isEqualTo(4);
            }
        });
        assertThat(Gil.isHeld()).isFalse();
        assertThat(evalOnAnotherThread()).isEqualTo(42);
    }

    @Test
    @Tag("any-cpython")
    void allowThreadsOutsideAScopeJustRunsItsBody() {
        AtomicBoolean ran = new AtomicBoolean();
        PY.allowThreads(() -> ran.set(!Gil.isHeld()));
        assertThat(ran).isTrue();
        assertThat(Gil.isHeld()).isFalse();
    }

    @Test
    @Tag("any-cpython")
    void javaCalledFromPythonInsideAScopeMayOpenScopesAndAllowThreads() throws Exception {
        try (PyObject callback = PY.function(args -> PY.withGil(() -> {
            PY.allowThreads(() -> {
                try {
                    evalOnAnotherThread();
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            });
            return evalLong("40") + 2;
        }))) {
            PY.setGlobal("callback", callback);
            long r = PY.withGil(() -> evalLong("callback()"));
            assertThat(r).isEqualTo(42);
        }
        assertThat(Gil.isHeld()).isFalse();
        assertThat(evalOnAnotherThread()).isEqualTo(42);
    }

    @Test
    @Tag("any-cpython")
    void aVirtualThreadsScopeRunsItsWholeBodyOnOnePlatformThreadHoldingTheGil() throws Exception {
        AtomicReference<Throwable> error = new AtomicReference<>();
        List<Thread> seen = new java.util.concurrent.CopyOnWriteArrayList<>();
        AtomicBoolean heldThroughout = new AtomicBoolean(true);
        Thread vt = Thread.ofVirtual().start(() -> {
            try {
                long r = PY.withGil(() -> {
                    seen.add(Thread.currentThread());
                    heldThroughout.compareAndSet(true, Gil.isHeld());
                    long sum = 0;
                    for (int i = 0; i < 50; i++) {
                        try (PyObject v = PY.eval(Integer.toString(i))) {
                            sum += v.asLong();
                        }
                        seen.add(Thread.currentThread());
                    }
                    heldThroughout.compareAndSet(true, Gil.isHeld());
                    return sum;
                });
                assertThat(r).isEqualTo(49 * 50 / 2);
            } catch (Throwable t) {
                error.set(t);
            }
        });
        vt.join(10_000);
        assertThat(vt.isAlive()).isFalse();
        assertThat(error.get()).isNull();
        assertThat(seen).hasSize(51).allSatisfy(t -> {
            assertThat(t.isVirtual()).isFalse();
            assertThat(t.getName()).startsWith("dlpack4j-python-");
        });
        assertThat(new java.util.HashSet<>(seen)).as("one platform thread for the whole body").hasSize(1);
        assertThat(heldThroughout).isTrue();
    }

    @Test
    void closingInsideAScopeReleasesAtOnceWithNothingLeftPending() {
        PY.exec("import numpy as np, weakref\nscoped = np.arange(3.0)\nscoped_ref = weakref.ref(scoped)");
        PY.withGil(() -> {
            ManagedTensor m;
            try (PyObject a = PY.getGlobal("scoped")) {
                m = PythonDlpack.fromDlpack(a);
            }
            PY.exec("del scoped");
            m.close();
            assertThat(PendingReleases.pendingDeleters()).as("deleters queued").isZero();
            try (PyObject alive = PY.eval("scoped_ref() is not None")) {
                assertThat(alive.asBoolean()).as("numpy's array still alive").isFalse();
            }
        });
    }

    private static long evalLong(String expression) {
        try (PyObject r = PY.eval(expression)) {
            return r.asLong();
        }
    }

    private static String evalString(String expression) {
        try (PyObject r = PY.eval(expression)) {
            return r.str();
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
