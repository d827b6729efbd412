package io.github.dlpack4j.model;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Semaphore;

import io.github.dlpack4j.ManagedTensor;
import io.github.dlpack4j.Tensor;

/**
 * One of a model's platform threads: takes batches from the {@link Scheduler} and runs them, one
 * model call at a time. A batch of one request runs on the caller's own memory; a larger one is
 * stacked into this worker's input buffers (one per input, {@code maxBatchRows} rows, reused), and
 * each request gets a view of its own rows of the outputs. When a stacked call fails, its requests
 * run again one by one, so that only a request that fails alone fails.
 */
final class Worker implements Runnable {
    private final Scheduler scheduler;
    private final ModelCall call;
    private final Signature signature;
    private final Recorder recorder;
    private final long maxBatchRows;
    /** Runs once this thread is done, its buffers freed. */
    private final Runnable exited;
    /** The model calls that may run at once: this thread takes one for each batch. */
    private final Semaphore slots;
    /** The model's count of its calls running on each thread ({@code PythonModel.callingHere}). */
    private final ThreadLocal<int[]> callingHere;
    /** Per input, the stacked batch's buffer; null (or absent) until a stacked batch needs it. */
    private final List<Tensor> buffers = new ArrayList<>();

    Worker(Scheduler scheduler, ModelCall call, Signature signature, Recorder recorder, long maxBatchRows,
           Semaphore slots, ThreadLocal<int[]> callingHere, Runnable exited) {
        this.slots = slots;
        this.callingHere = callingHere;
        this.scheduler = scheduler;
        this.call = call;
        this.signature = signature;
        this.recorder = recorder;
        this.maxBatchRows = maxBatchRows;
        this.exited = exited;
    }

    @Override
    public void run() {
        try {
            while (true) {
                // A callback of a future runs on this thread and may leave it interrupted: only
                // close stops a worker, so the status is cleared before each wait for a batch.
                Thread.interrupted();
                List<Request<?>> batch = scheduler.next();
                if (batch == null) {
                    break;
                }
                slots.acquireUninterruptibly();
                try {
                    runHolding(batch);
                } finally {
                    slots.release();
                }
            }
        } finally {
            for (Tensor b : buffers) {
                if (b != null) {
                    b.close();
                }
            }
            exited.run();
        }
    }

    /**
     * Runs a batch holding its requests' inputs, whoever settles them meanwhile. Whatever escapes
     * (a batch buffer that cannot be allocated, an output that cannot be sliced) fails the requests
     * of the batch still unsettled, and this thread goes on with the next batch.
     */
    private void runHolding(List<Request<?>> gathered) {
        List<Request<?>> held = new ArrayList<>(gathered.size());
        try {
            for (Request<?> r : gathered) {
                if (r.use()) {
                    held.add(r);
                }
            }
            run(held);
        } catch (Throwable t) {
            for (Request<?> r : held) {
                r.fail(t);
            }
        } finally {
            held.forEach(Request::release);
        }
    }

    private void run(List<Request<?>> gathered) {
        long now = System.nanoTime();
        List<Request<?>> batch = new ArrayList<>(gathered.size());
        for (Request<?> r : gathered) {
            if (r.expired(now)) {
                r.timeOut(now); // dropped before its batch runs
            } else if (!r.settled()) {
                r.startedAt = now;
                r.started = true;
                batch.add(r);
            }
        }
        if (batch.size() == 1) {
            runAlone(batch.getFirst(), false);
        } else if (!batch.isEmpty() && !runStacked(batch)) {
            for (Request<?> r : batch) { // again one by one: those settled meanwhile are done
                long t = System.nanoTime();
                if (r.expired(t)) {
                    r.timeOut(t);
                } else if (!r.settled()) {
                    runAlone(r, true);
                }
            }
        }
    }

    /**
     * One request on its own memory: no copy.
     *
     * @param rerun whether its stacked batch failed: its queue wait is recorded already
     */
    private void runAlone(Request<?> r, boolean rerun) {
        long wait = System.nanoTime() - r.admitted;
        if (!rerun) {
            recorder.waited(wait);
        }
        ModelResult answer;
        try {
            answer = callOnce(call, signature, recorder, r.inputs, r.rows, scheduler.batching() ? r.rows : -1,
                    r.listRows, wait, callingHere.get());
        } catch (RuntimeException | Error e) {
            r.fail(e);
            return;
        }
        r.answer(answer);
    }

    /**
     * One model call on one request's own memory, recorded as a batch of one request (its JFR event,
     * its run time): a worker's, or a caller's on its own thread.
     *
     * @param rows      the request's rows
     * @param checkRows the rows its tensor outputs' dim 0 must have, or -1 (no batching)
     * @param listRows  the rows its text and value outputs must have, or -1 (unknown)
     * @param wait      its queue wait, for the event
     * @param depth     this thread's count of the model's calls running on it, raised while this one
     *                  runs: a call the model makes back into itself runs here too ({@code PythonModel.predict})
     * @return the outputs, owned by the caller
     * @throws RuntimeException what failed the call (the model's error, an output that breaks the signature)
     */
    static ModelResult callOnce(ModelCall call, Signature signature, Recorder recorder, List<Object> inputs,
                                long rows, long checkRows, long listRows, long wait, int[] depth) {
        long start = System.nanoTime();
        ModelEvents.Batch event = new ModelEvents.Batch();
        event.begin();
        ModelResult answer;
        depth[0]++;
        try (ModelCall.Outputs out = call.call(inputs)) {
            signature.checkOutputs(out, checkRows, listRows);
            answer = answer(out, signature.outputKinds(), -1, 0);
        } catch (RuntimeException | Error e) {
            recorder.batch(event, rows, 1, wait, System.nanoTime() - start, false);
            throw e;
        } finally {
            depth[0]--;
        }
        recorder.batch(event, rows, 1, wait, System.nanoTime() - start, true);
        return answer;
    }

    /**
     * A request's outputs: owning handles of rows {@code from} to {@code from + rows} of each
     * tensor output, and those rows of each text and value output; the whole outputs when
     * {@code from} is -1. The model's memory is released when the last handle is closed.
     */
    private static ModelResult answer(ModelCall.Outputs out, List<Signature.Kind> kinds, long from, long rows) {
        Map<String, Object> answer = new LinkedHashMap<>();
        Set<String> texts = new HashSet<>();
        try {
            for (int j = 0; j < out.names().size(); j++) {
                String name = out.names().get(j);
                if (out.values().get(j) instanceof List<?> list) {
                    answer.put(name, from < 0 ? list : Values.rows(list, from, rows));
                    if (kinds.get(j) == Signature.Kind.TEXT) {
                        texts.add(name);
                    }
                } else {
                    Tensor t = out.tensor(j);
                    answer.put(name, from < 0 ? t.share() : t.slice(0, from, from + rows, 1).share());
                }
            }
        } catch (RuntimeException | Error e) {
            new ModelResult(answer, texts).close();
            throw e;
        }
        return new ModelResult(answer, texts);
    }

    /**
     * Several requests stacked into one model call.
     *
     * @return false if the call failed: its requests are then still to answer
     */
    private boolean runStacked(List<Request<?>> batch) {
        long start = System.nanoTime();
        long longestWait = start - batch.getFirst().admitted;
        long rows = 0;
        for (Request<?> r : batch) {
            recorder.waited(start - r.admitted);
            rows += r.rows;
        }
        List<Object> inputs = stack(batch, rows);
        ModelEvents.Batch event = new ModelEvents.Batch();
        event.begin();
        ModelCall.Outputs out;
        try {
            out = call.call(inputs);
        } catch (RuntimeException | Error e) {
            recorder.batch(event, rows, batch.size(), longestWait, System.nanoTime() - start, false);
            return false;
        }
        try (out) {
            try {
                signature.checkOutputs(out, rows, rows);
            } catch (IllegalStateException e) {
                recorder.batch(event, rows, batch.size(), longestWait, System.nanoTime() - start, false);
                return false;
            }
            recorder.batch(event, rows, batch.size(), longestWait, System.nanoTime() - start, true);
            retireAliasedBuffers(out);
            long from = 0;
            for (Request<?> r : batch) {
                r.answer(answer(out, signature.outputKinds(), from, r.rows));
                from += r.rows;
            }
        }
        return true;
    }

    /**
     * The batch's inputs: each request's rows of a tensor input copied, one after the other, into
     * this worker's buffers; a text input's rows concatenated into one list.
     */
    private List<Object> stack(List<Request<?>> batch, long rows) {
        int count = batch.getFirst().inputs.size();
        List<Object> inputs = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            if (!(batch.getFirst().inputs.get(i) instanceof Tensor like)) {
                List<String> texts = new ArrayList<>((int) rows);
                for (Request<?> r : batch) {
                    texts.addAll(((Signature.Texts) r.inputs.get(i)).rows());
                }
                inputs.add(new Signature.Texts(texts));
                continue;
            }
            Tensor buffer = buffer(i, like);
            int input = i;
            buffer.withData(dst -> {
                long at = 0;
                for (Request<?> r : batch) {
                    at += copyInto((Tensor) r.inputs.get(input), dst, at);
                }
                return null;
            });
            inputs.add(buffer.slice(0, 0, rows, 1));
        }
        return inputs;
    }

    /** {@return the bytes of {@code t}, copied in row-major order into {@code dst} at {@code at}} */
    private static long copyInto(Tensor t, MemorySegment dst, long at) {
        if (t.isContiguous()) {
            return t.withData(src -> {
                MemorySegment.copy(src, 0, dst, at, src.byteSize());
                return src.byteSize();
            });
        }
        try (Tensor compact = t.copy()) {
            return copyInto(compact, dst, at);
        }
    }

    /** The buffer of input {@code i}, made anew when a batch's dtype or row shape differs from the last one's. */
    private Tensor buffer(int i, Tensor like) {
        long[] shape = like.shape();
        shape[0] = maxBatchRows;
        while (buffers.size() <= i) {
            buffers.add(null);
        }
        Tensor b = buffers.get(i);
        if (b == null || !b.dtype().equals(like.dtype()) || !Arrays.equals(b.shape(), shape)) {
            if (b != null) {
                b.close();
                buffers.set(i, null); // none, should the new one fail
            }
            b = Tensor.zeros(like.dtype(), shape);
            buffers.set(i, b);
        }
        return b;
    }

    /**
     * A model that returns its input (or a view of it) hands the callers memory of this worker's
     * buffer: that buffer is theirs now, and the next batch gets a new one (the old memory is freed
     * when their views are closed).
     */
    private void retireAliasedBuffers(ModelCall.Outputs out) {
        for (int i = 0; i < buffers.size(); i++) {
            Tensor b = buffers.get(i);
            if (b == null) {
                continue;
            }
            long lo = b.dataPointer();
            long hi = lo + b.withData(MemorySegment::byteSize);
            for (Object o : out.values()) {
                long p = o instanceof ManagedTensor m ? m.tensor().dataPointer() : -1;
                if (p >= lo && p < hi) {
                    b.close();
                    buffers.set(i, null);
                    break;
                }
            }
        }
    }
}
