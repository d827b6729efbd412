package io.github.dlpack4j.langchain4j;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.exception.UnsupportedFeatureException;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.PartialResponse;
import dev.langchain4j.model.chat.response.PartialResponseContext;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.output.FinishReason;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** A causal LM as LangChain4j's ChatModel and StreamingChatModel, against transformers' own generate. */
class PythonChatModelTest {
    private static PythonChatModel chat;

    @BeforeAll
    static void load() {
        chat = PythonChatModel.transformers(TinyLm.DIR).python(Minilm.PY).maxNewTokens(48).workers(2).build();
    }

    @AfterAll
    static void close() {
        chat.close();
    }

    private static ChatRequest ask(String user, int maxTokens) {
        return ChatRequest.builder().messages(UserMessage.from(user)).maxOutputTokens(maxTokens).build();
    }

    @Test
    void greedyAnswersEqualTransformersGenerateTokenForToken() {
        for (String prompt : TinyLm.prompts()) {
            Object[] expected = TinyLm.generate(prompt, 64);
            ChatResponse r = chat.chat(ask(prompt, 64));
            assertThat(r.aiMessage().text()).as(prompt).isEqualTo(expected[0]);
            assertThat(r.tokenUsage().outputTokenCount()).as(prompt).isEqualTo(expected[1]);
            assertThat(r.tokenUsage().inputTokenCount()).isPositive();
            assertThat(r.finishReason()).isIn(FinishReason.LENGTH, FinishReason.STOP);
        }
    }

    @Test
    void maxOutputTokensEndsTheAnswerWithLength() {
        ChatResponse r = chat.chat(ask("Hello there!", 5));
        Object[] expected = TinyLm.generate("Hello there!", 5);
        assertThat(r.aiMessage().text()).isEqualTo(expected[0]);
        if ((int) expected[1] == 5) {
            assertThat(r.finishReason()).isEqualTo(FinishReason.LENGTH);
        }
    }

    @Test
    void aStopSequenceEndsTheAnswerBeforeIt() {
        String full = (String) TinyLm.generate("Hello there!", 64)[0];
        String stop = full.substring(full.length() / 2, full.length() / 2 + 3);
        ChatResponse r = chat.chat(ChatRequest.builder().messages(UserMessage.from("Hello there!")).maxOutputTokens(64)
                .stopSequences(List.of(stop)).build());
        assertThat(r.aiMessage().text()).isEqualTo(full.substring(0, full.indexOf(stop)));
        assertThat(r.finishReason()).isEqualTo(FinishReason.STOP);
    }

    @Test
    void aSeededSampledAnswerIsTheSameEveryTime() {
        try (PythonChatModel sampled = PythonChatModel.transformers(TinyLm.DIR).python(Minilm.PY).name("tiny-sampled")
                .temperature(0.8).topP(0.9).seed(7).maxNewTokens(24).build()) {
            String first = sampled.chat("Hello there!");
            assertThat(sampled.chat("Hello there!")).isEqualTo(first);
            assertThat(first).isNotEqualTo(TinyLm.generate("Hello there!", 24)[0]);
        }
    }

    @Test
    void aSystemMessageAndAnAiTurnGoThroughTheChatTemplate() {
        ChatResponse r = chat.chat(ChatRequest.builder().messages(SystemMessage.from("Be brief."),
                UserMessage.from("Hi"), dev.langchain4j.data.message.AiMessage.from("Hello."), UserMessage.from("And?"))
                .maxOutputTokens(8).build());
        assertThat(r.tokenUsage().inputTokenCount()).isGreaterThan(chat.chat(ask("And?", 8)).tokenUsage().inputTokenCount());
    }

    @Test
    void toolsTopKAndPenaltiesAreRefusedBeforeTheModelRuns() {
        long before = chat.model().stats().requests();
        assertThatThrownBy(() -> chat.chat(ChatRequest.builder().messages(UserMessage.from("x")).topK(5).build()))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("top-k");
        assertThat(chat.model().stats().requests()).isEqualTo(before);
    }

    @Test
    void streamedPiecesMakeTheWholeAnswerAndTheCompleteResponseCarriesIt() throws Exception {
        String prompt = TinyLm.prompts().get(2);
        Object[] expected = TinyLm.generate(prompt, 64);
        List<String> pieces = new ArrayList<>();
        CompletableFuture<ChatResponse> done = new CompletableFuture<>();
        chat.streaming().chat(ask(prompt, 64), new StreamingChatResponseHandler() {
            @Override
            public void onPartialResponse(String partial) {
                pieces.add(partial);
            }

            @Override
            public void onCompleteResponse(ChatResponse response) {
                done.complete(response);
            }

            @Override
            public void onError(Throwable error) {
                done.completeExceptionally(error);
            }
        });
        ChatResponse r = done.get(60, TimeUnit.SECONDS);
        assertThat(String.join("", pieces)).isEqualTo(expected[0]).isEqualTo(r.aiMessage().text());
        assertThat(pieces).allSatisfy(p -> assertThat(p).isNotEmpty().doesNotContain("\uFFFD"));
        assertThat(pieces.size()).isGreaterThan(1);
    }

    @Test
    void cancellingThroughTheStreamingHandleStopsTheGeneration() throws Exception {
        List<String> pieces = new ArrayList<>();
        CompletableFuture<Void> cancelled = new CompletableFuture<>();
        long answeredBefore = chat.model().stats().answered();
        chat.streaming().chat(ask("Hello there!", 200), new StreamingChatResponseHandler() {
            @Override
            public void onPartialResponse(PartialResponse partial, PartialResponseContext context) {
                pieces.add(partial.text());
                if (pieces.size() == 3) {
                    context.streamingHandle().cancel();
                    cancelled.complete(null);
                }
            }

            @Override
            public void onCompleteResponse(ChatResponse response) {
                cancelled.completeExceptionally(new AssertionError("completed after a cancel"));
            }

            @Override
            public void onError(Throwable error) {
                cancelled.completeExceptionally(error);
            }
        });
        cancelled.get(60, TimeUnit.SECONDS);
        Thread.sleep(300);
        assertThat(pieces).hasSize(3);
        assertThat(chat.model().stats().answered()).isEqualTo(answeredBefore);
        // the generation's place is free: the next answer comes
        assertThat(chat.chat(ask("Hi", 4)).aiMessage()).isNotNull();
    }

    @Test
    void manyVirtualThreadsChattingAtOnceEachGetTheirOwnAnswer() throws Exception {
        List<String> prompts = new ArrayList<>();
        for (int i = 0; i < 24; i++) {
            prompts.add("Question number " + i + "?");
        }
        List<Object> expected = new ArrayList<>();
        for (String p : prompts) {
            expected.add(TinyLm.generate(p, 16)[0]);
        }
        try (var threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<String>> answers = new ArrayList<>();
            for (String p : prompts) {
                answers.add(threads.submit(() -> chat.chat(ask(p, 16)).aiMessage().text()));
            }
            for (int i = 0; i < prompts.size(); i++) {
                assertThat(answers.get(i).get(120, TimeUnit.SECONDS)).as(prompts.get(i)).isEqualTo(expected.get(i));
            }
        }
    }

    @Test
    void aFirstTokenDeadlineFailsTheAnswerWithATimeout() {
        try (PythonChatModel strict = PythonChatModel.transformers(TinyLm.DIR).python(Minilm.PY).name("tiny-strict")
                .streamTimeout(Duration.ofMillis(1)).maxNewTokens(200).build()) {
            assertThatThrownBy(() -> strict.chat("Hello there!"))
                    .isInstanceOf(io.github.dlpack4j.model.ModelTimeoutException.class);
        }
    }
}
