package io.github.dlpack4j.model;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;

/**
 * The JDK Flight Recorder events of dlpack4j-model: enabled, with no threshold, in every recording,
 * so that JDK Mission Control shows a model's batches, refusals and timeouts with nothing added.
 */
final class ModelEvents {
    private ModelEvents() {
    }

    /** One model call: a batch, a request alone, or a rerun of a failed batch's request. */
    @Name("io.github.dlpack4j.model.Batch")
    @Label("Model Batch")
    @Category({"dlpack4j", "Model"})
    @Description("One call of a PythonModel's model")
    @StackTrace(false)
    static final class Batch extends Event {
        @Label("Model")
        String model;
        @Label("Rows")
        long rows;
        @Label("Requests")
        int requests;
        @Label("Queue Wait")
        @Description("The longest wait of the call's requests, from admission to the call's start")
        @Timespan(Timespan.NANOSECONDS)
        long queueWait;
        @Label("Run Time")
        @Timespan(Timespan.NANOSECONDS)
        long runTime;
        @Label("Failed")
        boolean failed;
    }

    /** A request refused at once because the model's queue was full. */
    @Name("io.github.dlpack4j.model.Rejected")
    @Label("Model Request Rejected")
    @Category({"dlpack4j", "Model"})
    @Description("A PythonModel refused a request: its queue was full")
    @StackTrace(false)
    static final class Rejected extends Event {
        @Label("Model")
        String model;
        @Label("Queue Size")
        int maxQueue;
    }

    /** A request whose deadline passed. */
    @Name("io.github.dlpack4j.model.TimedOut")
    @Label("Model Request Timed Out")
    @Category({"dlpack4j", "Model"})
    @Description("A PythonModel request passed its deadline, waiting or running")
    @StackTrace(false)
    static final class TimedOut extends Event {
        @Label("Model")
        String model;
        @Label("Running")
        @Description("Whether its model call had started when the deadline passed")
        boolean running;
        @Label("Waited")
        @Description("From admission to the deadline")
        @Timespan(Timespan.NANOSECONDS)
        long waited;
    }

    /** One stream: the items its subscriber got, how long the first took, and how it ended. */
    @Name("io.github.dlpack4j.model.Stream")
    @Label("Model Stream")
    @Category({"dlpack4j", "Model"})
    @Description("One stream of a PythonModel's generator, from admission to its end")
    @StackTrace(false)
    static final class Stream extends Event {
        @Label("Model")
        String model;
        @Label("Items")
        long items;
        @Label("First Item")
        @Description("From admission to the first item; -1 if none came")
        @Timespan(Timespan.NANOSECONDS)
        long firstItem;
        @Label("Outcome")
        @Description("completed, failed, timed out, cancelled or closed")
        String outcome;
    }
}
