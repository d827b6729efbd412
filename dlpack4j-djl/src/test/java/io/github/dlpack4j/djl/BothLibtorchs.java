package io.github.dlpack4j.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import io.github.dlpack4j.Tensor;
import io.github.dlpack4j.python.Python;

/**
 * A fresh JVM with DJL's libtorch and the embedded Python's torch, in the order its argument says
 * ({@code djl-first} or {@code torch-first}); prints one line per step, {@code step: outcome}, for
 * {@link LibtorchConflictTest}.
 */
public final class BothLibtorchs {
    private BothLibtorchs() {}

    public static void main(String[] args) {
        boolean djlFirst = args[0].equals("djl-first");
        Python py = Python.start();
        if (djlFirst) {
            step("djl", BothLibtorchs::djl);
            step("check", () -> {
                DjlTensors.checkLibtorch();
                return "ok";
            });
            step("torch", () -> torch(py));
        } else {
            step("torch", () -> torch(py));
            step("check", () -> {
                DjlTensors.checkLibtorch();
                return "ok";
            });
            step("djl", BothLibtorchs::djl);
        }
        step("numpy", () -> py.eval("__import__('numpy').arange(3).sum()").str());
        step("djl again", BothLibtorchs::djl);
        step("torch again", () -> torch(py));
        System.out.println("end: alive");
    }

    private static String djl() {
        try (NDManager m = NDManager.newBaseManager("PyTorch"); NDArray x = m.arange(4f).mul(2);
             Tensor t = DjlTensors.of(x)) {
            return "ok " + t.getDouble(3);
        }
    }

    private static String torch(Python py) {
        return "ok " + py.eval("__import__('torch').arange(4).mul(2)[3].item()").str();
    }

    private static void step(String name, java.util.function.Supplier<String> body) {
        String outcome;
        try {
            outcome = body.get();
        } catch (Throwable t) {
            Throwable root = t;
            while (root.getCause() != null) {
                root = root.getCause();
            }
            outcome = "failed " + t.getClass().getSimpleName() + " / " + root.getClass().getSimpleName() + ": "
                    + root.getMessage().lines().findFirst().orElse("");
        }
        System.out.println(name + ": " + outcome);
        System.out.flush();
    }
}
