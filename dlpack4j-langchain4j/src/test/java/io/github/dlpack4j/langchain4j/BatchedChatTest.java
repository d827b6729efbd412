package io.github.dlpack4j.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.Flow;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.request.ChatRequest;
import io.github.dlpack4j.model.ModelResult;
import io.github.dlpack4j.model.PythonModel;
import io.github.dlpack4j.model.Transformers;
import io.github.dlpack4j.python.PyObject;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Generations whose decode steps share forward passes (Transformers.Builder.batching) answer as each alone. */
class BatchedChatTest {
    private static PythonChatModel batched;

    @BeforeAll
    static void load() {
        batched = PythonChatModel.transformers(TinyLm.DIR).python(Minilm.PY).name("tiny-batched")
                .batching(16, Duration.ofMillis(5)).build();
    }

    @AfterAll
    static void close() {
        batched.close();
    }

    private static ChatRequest ask(String user, int maxTokens) {
        return ChatRequest.builder().messages(UserMessage.from(user)).maxOutputTokens(maxTokens).build();
    }

    /** {@return the decode steps every chat model of the interpreter ran, the streams' steps in them, the streams open} */
    private static long[] decodeStats() {
        try (PyObject stats = Minilm.PY.eval("__import__('dlpack4j_text').decode_stats()")) {
            Map<?, ?> m = (Map<?, ?>) stats.toJava();
            return new long[] {((Number) m.get("steps")).longValue(), ((Number) m.get("rows")).longValue(),
                    ((Number) m.get("open")).longValue()};
        }
    }

    @Test
    void sixteenGreedyGenerationsAtOnceShareStepsAndEachEqualsTransformersGenerate() throws Exception {
        List<String> prompts = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            prompts.add(i % 3 == 0 ? "Question " + i + ": how long is a piece of string, really?" : "Hi " + i);
        }
        List<Object> expected = new ArrayList<>();
        for (String p : prompts) {
            expected.add(TinyLm.generate(p, 40)[0]);
        }
        long[] before = decodeStats();
        try (var threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<String>> answers = new ArrayList<>();
            for (String p : prompts) {
                answers.add(threads.submit(() -> batched.chat(ask(p, 40)).aiMessage().text()));
            }
            for (int i = 0; i < prompts.size(); i++) {
                assertThat(answers.get(i).get(120, TimeUnit.SECONDS)).as(prompts.get(i)).isEqualTo(expected.get(i));
            }
        }
        long[] after = decodeStats();
        double meanRows = (double) (after[1] - before[1]) / (after[0] - before[0]);
        assertThat(meanRows).as("streams per decode step").isGreaterThan(2.0);
    }

    @Test
    void aLoneGenerationStepsAloneAndNeverWaitsForCompany() {
        long[] before = decodeStats();
        String answer = batched.chat(ask("Hello there!", 24)).aiMessage().text();
        long[] after = decodeStats();
        assertThat(answer).isEqualTo(TinyLm.generate("Hello there!", 24)[0]);
        assertThat(after[1] - before[1]).as("rows").isEqualTo(after[0] - before[0]);
    }

    @Test
    void aSlowReaderFallsOutOfTheSharedStepsAndRejoinsWithItsOwnAnswer() throws Exception {
        PythonModel model = batched.model();
        String slowPrompt = "I read one token every 20 ms";
        Object slowExpected = TinyLm.generate(slowPrompt, 30)[0];
        List<String> prompts = List.of("Quick one", "Quick two, a little longer", "Quick three");
        List<Object> expected = new ArrayList<>();
        for (String p : prompts) {
            expected.add(TinyLm.generate(p, 60)[0]);
        }
        CompletableFuture<String> slow = new CompletableFuture<>();
        model.stream(Map.of(Transformers.MESSAGES, "[{\"role\": \"user\", \"content\": " + Transformers.jsonString(slowPrompt) + "}]",
                Transformers.PARAMETERS, "{\"max_new_tokens\": 30}")).subscribe(new Flow.Subscriber<>() {
                    private final StringBuilder text = new StringBuilder();
                    private Flow.Subscription s;

                    @Override
                    public void onSubscribe(Flow.Subscription s) {
                        this.s = s;
                        s.request(1);
                    }

                    @Override
                    public void onNext(ModelResult item) {
                        try (item) {
                            text.append(item.text(Transformers.DELTA));
                            Thread.sleep(20);   // the others step on without it meanwhile
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                        s.request(1);
                    }

                    @Override
                    public void onError(Throwable e) {
                        slow.completeExceptionally(e);
                    }

                    @Override
                    public void onComplete() {
                        slow.complete(text.toString());
                    }
                });
        try (var threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<String>> answers = new ArrayList<>();
            for (String p : prompts) {
                answers.add(threads.submit(() -> batched.chat(ask(p, 60)).aiMessage().text()));
            }
            for (int i = 0; i < prompts.size(); i++) {
                assertThat(answers.get(i).get(120, TimeUnit.SECONDS)).as(prompts.get(i)).isEqualTo(expected.get(i));
            }
        }
        assertThat(slow.get(120, TimeUnit.SECONDS)).isEqualTo(slowExpected);
    }

    @Test
    void aGenerationCancelledInTheMiddleOfSharedStepsLeavesTheOthersTheirAnswers() throws Exception {
        PythonModel model = batched.model();
        List<String> prompts = List.of("One more question?", "A second one", "And a third, longer question for the model");
        List<Object> expected = new ArrayList<>();
        for (String p : prompts) {
            expected.add(TinyLm.generate(p, 48)[0]);
        }
        CountDownLatch threeItems = new CountDownLatch(3);
        CompletableFuture<Void> cancelled = new CompletableFuture<>();
        model.stream(Map.of(Transformers.MESSAGES, "[{\"role\": \"user\", \"content\": \"cancel me\"}]",
                Transformers.PARAMETERS, "{\"max_new_tokens\": 200}")).subscribe(new Flow.Subscriber<>() {
                    private Flow.Subscription s;

                    @Override
                    public void onSubscribe(Flow.Subscription s) {
                        this.s = s;
                        s.request(Long.MAX_VALUE);
                    }

                    @Override
                    public void onNext(ModelResult item) {
                        item.close();
                        threeItems.countDown();
                        if (threeItems.getCount() == 0 && !cancelled.isDone()) {
                            s.cancel();
                            cancelled.complete(null);
                        }
                    }

                    @Override
                    public void onError(Throwable e) {
                        cancelled.completeExceptionally(e);
                    }

                    @Override
                    public void onComplete() {
                        cancelled.completeExceptionally(new AssertionError("completed before it was cancelled"));
                    }
                });
        try (var threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<String>> answers = new ArrayList<>();
            for (String p : prompts) {
                answers.add(threads.submit(() -> batched.chat(ask(p, 48)).aiMessage().text()));
            }
            cancelled.get(60, TimeUnit.SECONDS);
            for (int i = 0; i < prompts.size(); i++) {
                assertThat(answers.get(i).get(120, TimeUnit.SECONDS)).as(prompts.get(i)).isEqualTo(expected.get(i));
            }
        }
        // the cancelled generator's finally ran: no chat stream is open, and the model answers again
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (decodeStats()[2] > 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(decodeStats()[2]).as("open chat streams").isZero();
        assertThat(batched.chat(ask("Hi", 4)).aiMessage()).isNotNull();
    }
}
