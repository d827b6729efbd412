package io.github.dlpack4j.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

import io.github.dlpack4j.model.ModelStats;
import io.github.dlpack4j.model.PythonModel;
import io.micrometer.core.instrument.MeterRegistry;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.Message;
import org.springframework.ai.chat.messages.SystemMessage;
import org.springframework.ai.chat.messages.ToolResponseMessage;
import org.springframework.ai.chat.messages.UserMessage;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.chat.prompt.ChatOptions;
import org.springframework.ai.chat.prompt.Prompt;
import org.springframework.ai.content.Media;
import org.springframework.ai.model.tool.StructuredOutputChatOptions;
import org.springframework.ai.model.tool.ToolCallingChatOptions;
import org.springframework.ai.tool.ToolCallback;
import org.springframework.ai.tool.definition.ToolDefinition;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.util.MimeTypeUtils;

import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;

/**
 * The small causal LM of {@code scripts/tiny-lm} from {@code application.yml} alone
 * ({@code src/test/resources/tiny-lm}: 24 new tokens, greedy, top-p 0.9 and seed 7 by default), in
 * an application with Spring Boot's auto-configuration and Spring AI on the class path: its Spring
 * AI {@link ChatModel} bean against transformers' own {@code generate} run directly.
 */
class ChatModelBeanTest {
    private static final Duration WAIT = Duration.ofSeconds(120);
    private static ConfigurableApplicationContext context;
    private static ChatModel chat;
    private static PythonModel model;

    /** An application that takes the chat model by type, as a service of its own would. */
    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class Application {
        @Bean
        Assistant assistant(ChatModel chatModel) {
            return new Assistant(chatModel);
        }
    }

    /** A bean of the application's that needs a chat model. */
    record Assistant(ChatModel chatModel) {
    }

    /** {@return the application, started from {@code tiny-lm/application.yml}} */
    static ConfigurableApplicationContext start() {
        SpringApplication app = new SpringApplicationBuilder(Application.class).web(WebApplicationType.NONE)
                .properties("spring.config.location=classpath:/tiny-lm/application.yml").build();
        app.setRegisterShutdownHook(false);
        return app.run();
    }

    @BeforeAll
    static void startApplication() {
        context = start();
        chat = context.getBean(ChatModel.class);
        model = context.getBean("tiny", PythonModel.class);
    }

    @AfterAll
    static void stopApplication() {
        context.close();
    }

    private static Prompt ask(String user, ChatOptions options) {
        return new Prompt(new UserMessage(user), options);
    }

    private static String text(ChatResponse r) {
        return r.getResult().getOutput().getText();
    }

    private static String joined(List<ChatResponse> pieces) {
        StringBuilder b = new StringBuilder();
        pieces.forEach(p -> b.append(text(p)));
        return b.toString();
    }

    /** Waits until {@code done} holds, at most 10 s. */
    private static void await(Supplier<Boolean> done) throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!done.get() && System.nanoTime() < until) {
            Thread.sleep(20);
        }
        assertThat(done.get()).as("within 10 s").isTrue();
    }

    @Test
    void theEntryMakesAPythonModelBeanAndAChatModelBeanNamedAfterIt() {
        assertThat(context.getBeansOfType(PythonModel.class)).containsOnlyKeys("tiny");
        assertThat(context.getBeansOfType(ChatModel.class)).containsOnlyKeys("tinyChatModel");
        assertThat(chat).isInstanceOf(TransformersChatModel.class);
        assertThat(((TransformersChatModel) chat).model()).isSameAs(model);
        assertThat(context.getBean(Assistant.class).chatModel()).as("injected by type").isSameAs(chat);
        assertThat(model.textInputs()).containsExactly("messages", "parameters");
    }

    @Test
    void callIsTransformersGreedyGenerateTokenForTokenWithTheFinishReasonAndUsage() {
        for (String p : TinyLm.PROMPTS) {
            TinyLm.Generated expected = TinyLm.generate(p, 24);
            ChatResponse r = chat.call(new Prompt(p));
            assertThat(r.getResults()).as(p).hasSize(1);
            assertThat(text(r)).as(p).isEqualTo(expected.text());
            assertThat(r.getResult().getMetadata().getFinishReason()).as(p).isEqualTo("length");
            assertThat(r.getMetadata().getModel()).isEqualTo("tiny");
            assertThat(r.getMetadata().getUsage().getPromptTokens()).as(p).isEqualTo(expected.promptTokens());
            assertThat(r.getMetadata().getUsage().getCompletionTokens()).as(p).isEqualTo(expected.completionTokens()).isEqualTo(24);
            assertThat(r.getMetadata().getUsage().getTotalTokens()).as(p).isEqualTo(expected.promptTokens() + 24);
        }
        assertThat(chat.call("Hello there!")).as("call(String)").isEqualTo(TinyLm.generate("Hello there!", 24).text());
    }

    @Test
    void aConversationOfSystemUserAndAssistantMessagesIsAnsweredOnTheChatTemplatesPrompt() {
        List<TinyLm.Turn> turns = List.of(new TinyLm.Turn("system", "You answer in one line."), new TinyLm.Turn("user", "Hi"),
                new TinyLm.Turn("assistant", "Hello.\n\"Quoted\" \\ back"), new TinyLm.Turn("user", "What is DLPack?"));
        List<Message> messages = List.of(new SystemMessage(turns.get(0).content()), new UserMessage(turns.get(1).content()),
                new AssistantMessage(turns.get(2).content()), new UserMessage(turns.get(3).content()));
        TinyLm.Generated expected = TinyLm.generate(turns, 24);
        ChatResponse r = chat.call(new Prompt(messages));
        assertThat(text(r)).isEqualTo(expected.text());
        assertThat(r.getMetadata().getUsage().getPromptTokens()).isEqualTo(expected.promptTokens());
    }

    @Test
    void streamPiecesJoinToTheCallsTextAndOnlyTheLastCarriesTheFinishReasonAndUsage() {
        String p = TinyLm.PROMPTS.get(1);
        String called = text(chat.call(new Prompt(p)));
        List<ChatResponse> pieces = chat.stream(new Prompt(p)).collectList().block(WAIT);
        assertThat(pieces).hasSizeGreaterThan(2);
        assertThat(joined(pieces)).isEqualTo(called).isEqualTo(TinyLm.generate(p, 24).text());
        for (ChatResponse piece : pieces.subList(0, pieces.size() - 1)) {
            assertThat(piece.getResults()).hasSize(1);
            assertThat(text(piece)).isNotEmpty();
            assertThat(piece.getResult().getMetadata().getFinishReason()).isNull();
            assertThat(piece.getMetadata().getModel()).isEqualTo("tiny");
            assertThat(piece.getMetadata().getUsage().getCompletionTokens()).isZero();
        }
        ChatResponse last = pieces.getLast();
        assertThat(last.getResult().getMetadata().getFinishReason()).isEqualTo("length");
        assertThat(last.getMetadata().getModel()).isEqualTo("tiny");
        assertThat(last.getMetadata().getUsage().getPromptTokens()).isEqualTo(TinyLm.generate(p, 24).promptTokens());
        assertThat(last.getMetadata().getUsage().getCompletionTokens()).isEqualTo(24);
    }

    @Test
    void aSubscriberThatRequestsTwoPiecesGetsTwoAndTheGenerationWaitsForItsNextRequest() throws Exception {
        String p = TinyLm.PROMPTS.getFirst();
        String expected = TinyLm.generate(p, 24).text();
        long answeredBefore = model.stats().answered();
        List<ChatResponse> pieces = new CopyOnWriteArrayList<>();
        CompletableFuture<Void> done = new CompletableFuture<>();
        BaseSubscriber<ChatResponse> twoFirst = new BaseSubscriber<>() {
            @Override
            protected void hookOnSubscribe(Subscription s) {
                s.request(2);
            }

            @Override
            protected void hookOnNext(ChatResponse r) {
                pieces.add(r);
            }

            @Override
            protected void hookOnComplete() {
                done.complete(null);
            }

            @Override
            protected void hookOnError(Throwable e) {
                done.completeExceptionally(e);
            }
        };
        chat.stream(new Prompt(p)).subscribe(twoFirst);
        await(() -> pieces.size() == 2);
        Thread.sleep(500); // 24 tokens of this model take less: a generation run ahead would have ended
        assertThat(pieces).hasSize(2);
        assertThat(model.stats().answered()).as("streams answered while the subscriber asked for nothing").isEqualTo(answeredBefore);
        twoFirst.requestUnbounded();
        done.get(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(joined(pieces)).isEqualTo(expected);
        assertThat(model.stats().answered()).isEqualTo(answeredBefore + 1);
    }

    @Test
    void cancellingTheFluxAfterThreePiecesStopsTheGenerationAndTheNextCallIsAnswered() throws Exception {
        String p = TinyLm.PROMPTS.getFirst();
        assertThat(TinyLm.generate(p, 200).completionTokens()).as("the tokens the model would go on for").isEqualTo(200);
        ModelStats before = model.stats();
        List<ChatResponse> three = chat.stream(ask(p, ChatOptions.builder().maxTokens(200).build())).take(3).collectList().block(WAIT);
        assertThat(three).hasSize(3);
        await(() -> model.stats().requests() - before.requests() == 1 && model.stats().streamItems() > before.streamItems());
        ModelStats after = model.stats();
        assertThat(after.answered()).as("answered streams").isEqualTo(before.answered());
        assertThat(after.failed()).isEqualTo(before.failed());
        assertThat(after.streamItems() - before.streamItems()).as("items the generator made").isBetween(3L, 4L);
        assertThat(model.queued()).isZero();
        assertThat(text(chat.call(ask(p, ChatOptions.builder().maxTokens(5).build())))).isEqualTo(TinyLm.generate(p, 5).text());
    }

    @Test
    void aCallerInterruptedWhileTheModelGeneratesGetsACancellationAndTheGenerationStops() throws Exception {
        String p = TinyLm.PROMPTS.getFirst();
        ModelStats before = model.stats();
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        AtomicBoolean stillInterrupted = new AtomicBoolean();
        Thread caller = Thread.ofVirtual().start(() -> {
            try {
                chat.call(ask(p, ChatOptions.builder().maxTokens(1000).build()));
            } catch (RuntimeException e) {
                thrown.set(e);
                stillInterrupted.set(Thread.currentThread().isInterrupted());
            }
        });
        await(() -> model.stats().requests() > before.requests());
        Thread.sleep(500); // its first tokens come (a stream cancelled before its first item shows in no count)
        caller.interrupt();
        caller.join(Duration.ofSeconds(10));
        assertThat(thrown.get()).isInstanceOf(CancellationException.class).hasMessageContaining("interrupted while model tiny generated");
        assertThat(stillInterrupted).as("the caller's interrupt status").isTrue();
        await(() -> model.stats().streamItems() > before.streamItems());
        assertThat(model.stats().answered()).as("answered streams").isEqualTo(before.answered());
        assertThat(model.stats().streamItems() - before.streamItems()).as("items of 1000 the generator made").isLessThan(500);
        assertThat(text(chat.call(ask(p, ChatOptions.builder().maxTokens(5).build())))).isEqualTo(TinyLm.generate(p, 5).text());
    }

    @Test
    void manyVirtualThreadsCallingAtOnceEachGetTheirOwnAnswer() throws Exception {
        List<String> prompts = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            prompts.add("Question number " + i + "?");
        }
        List<String> expected = prompts.stream().map(q -> TinyLm.generate(q, 8).text()).toList();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<String>> answers = new ArrayList<>();
            for (String q : prompts) {
                answers.add(threads.submit(() -> text(chat.call(ask(q, ChatOptions.builder().maxTokens(8).build())))));
            }
            for (int i = 0; i < prompts.size(); i++) {
                assertThat(answers.get(i).get(WAIT.toSeconds(), TimeUnit.SECONDS)).as(prompts.get(i)).isEqualTo(expected.get(i));
            }
        }
    }

    @Test
    void thePromptsMaxTokensOverridesThePropertiesAndFinishesWithLength() {
        String p = TinyLm.PROMPTS.get(2);
        ChatResponse r = chat.call(ask(p, ChatOptions.builder().maxTokens(3).build()));
        assertThat(text(r)).isEqualTo(TinyLm.generate(p, 3).text());
        assertThat(r.getResult().getMetadata().getFinishReason()).isEqualTo("length");
        assertThat(r.getMetadata().getUsage().getCompletionTokens()).isEqualTo(3);
    }

    @Test
    void aStopSequenceOfThePromptEndsTheTextBeforeItWithFinishReasonStop() {
        String p = TinyLm.PROMPTS.getFirst();
        String greedy = TinyLm.generate(p, 24).text();
        String stop = greedy.substring(greedy.length() / 2, greedy.length() / 2 + 3);
        ChatResponse r = chat.call(ask(p, ChatOptions.builder().stopSequences(List.of(stop)).build()));
        assertThat(text(r)).isEqualTo(greedy.substring(0, greedy.indexOf(stop)));
        assertThat(r.getResult().getMetadata().getFinishReason()).isEqualTo("stop");
        List<ChatResponse> pieces = chat.stream(ask(p, ChatOptions.builder().stopSequences(List.of(stop)).build())).collectList().block(WAIT);
        assertThat(joined(pieces)).isEqualTo(text(r));
        assertThat(pieces.getLast().getResult().getMetadata().getFinishReason()).isEqualTo("stop");
    }

    @Test
    void thePromptsTemperatureAndTopPOverrideTheGreedyDefaultAndThePropertiesSeedIsKept() {
        String p = TinyLm.PROMPTS.get(1);
        String greedy = TinyLm.generate(p, 24).text();
        ChatOptions nucleusOfOne = ChatOptions.builder().temperature(1.0).topP(1e-9).build();
        assertThat(text(chat.call(ask(p, nucleusOfOne)))).as("only the most likely token is kept").isEqualTo(greedy);
        ChatOptions sampled = ChatOptions.builder().temperature(1.0).topP(1.0).build();
        String once = text(chat.call(ask(p, sampled)));
        assertThat(once).as("24 tokens sampled from random weights' softmax").isNotEqualTo(greedy);
        assertThat(text(chat.call(ask(p, sampled)))).as("seeded by the properties").isEqualTo(once);
    }

    @Test
    void theOptionsAreTheDefaultsOfThePropertiesAndThoseThatArePlainJava() {
        ChatOptions o = chat.getOptions();
        assertThat(o.getModel()).isEqualTo("tiny");
        assertThat(o.getMaxTokens()).isEqualTo(24);
        assertThat(o.getTemperature()).isEqualTo(0.0);
        assertThat(o.getTopP()).isEqualTo(0.9);
        assertThat(o.getStopSequences()).isEmpty();
        assertThat(o.getTopK()).isNull();
        assertThat(o.getFrequencyPenalty()).isNull();
        assertThat(o.getPresencePenalty()).isNull();
        TransformersChatModel plain = new TransformersChatModel(model);
        assertThat(plain.getOptions().getMaxTokens()).isEqualTo(256);
        assertThat(plain.getOptions().getTemperature()).isEqualTo(0.0);
        assertThat(plain.getOptions().getTopP()).isEqualTo(1.0);
    }

    /** A tool that the model is asked to call; it is never called. */
    private static final ToolCallback WEATHER = new ToolCallback() {
        @Override
        public ToolDefinition getToolDefinition() {
            return ToolDefinition.builder().name("weather").description("The weather in a city")
                    .inputSchema("{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}}").build();
        }

        @Override
        public String call(String toolInput) {
            throw new AssertionError("called with " + toolInput);
        }
    };

    @Test
    void unsupportedOptionsAndMessagesAreRefusedBeforeTheModelRunsByCallAndStream() {
        List<Map.Entry<Prompt, String>> refused = new ArrayList<>();
        refused.add(Map.entry(ask("Hi", ChatOptions.builder().topK(5).build()), "topK"));
        refused.add(Map.entry(ask("Hi", ChatOptions.builder().frequencyPenalty(0.5).build()), "frequencyPenalty"));
        refused.add(Map.entry(ask("Hi", ChatOptions.builder().presencePenalty(0.5).build()), "presencePenalty"));
        refused.add(Map.entry(ask("Hi", ToolCallingChatOptions.builder().toolCallbacks(WEATHER).build()), "tools"));
        refused.add(Map.entry(ask("Hi", StructuredOutputChatOptions.builder().outputSchema("{\"type\": \"object\"}").build()), "output schema"));
        refused.add(Map.entry(ask("Hi", ChatOptions.builder().maxTokens(0).build()), "maxTokens 0"));
        refused.add(Map.entry(ask("Hi", ChatOptions.builder().temperature(-0.5).build()), "temperature -0.5"));
        refused.add(Map.entry(ask("Hi", ChatOptions.builder().topP(0.0).build()), "topP 0.0"));
        refused.add(Map.entry(ask("Hi", ChatOptions.builder().topP(1.5).build()), "topP 1.5"));
        refused.add(Map.entry(new Prompt(UserMessage.builder().text("What is this?")
                .media(Media.builder().mimeType(MimeTypeUtils.IMAGE_PNG).data(new byte[] {1, 2, 3}).build())
                .build()), "media"));
        refused.add(Map.entry(new Prompt(List.of(new UserMessage("Weather?"), AssistantMessage.builder().content("")
                .toolCalls(List.of(new AssistantMessage.ToolCall("1", "function", "weather", "{}"))).build())), "tool calls"));
        refused.add(Map.entry(new Prompt(List.of(new UserMessage("Weather?"), ToolResponseMessage.builder()
                .responses(List.of(new ToolResponseMessage.ToolResponse("1", "weather", "sunny"))).build())), "TOOL"));
        long before = model.stats().requests();
        for (Map.Entry<Prompt, String> e : refused) {
            assertThatThrownBy(() -> chat.call(e.getKey())).as(e.getValue()).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("model tiny").hasMessageContaining(e.getValue());
            Flux<ChatResponse> stream = chat.stream(e.getKey());
            assertThatThrownBy(() -> stream.blockLast(WAIT)).as(e.getValue()).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(e.getValue());
        }
        assertThat(model.stats().requests()).as("requests admitted").isEqualTo(before);
    }

    @Test
    void healthIsUpAndTheMetersCountTheChatModelsAnswersUnderTheEntrysName() {
        Health h = context.getBean("dlpack4jHealthIndicator", HealthIndicator.class).health();
        assertThat(h.getStatus()).isEqualTo(Status.UP);
        assertThat(h.getDetails()).containsEntry("tiny", Map.of("state", "ready", "queued", 0));
        MeterRegistry registry = context.getBean(MeterRegistry.class);
        double before = registry.get("dlpack4j.model.requests").tags("model", "tiny", "outcome", "answered").counter().count();
        chat.call(ask("Hi", ChatOptions.builder().maxTokens(2).build()));
        chat.stream(ask("Hi", ChatOptions.builder().maxTokens(2).build())).blockLast(WAIT);
        assertThat(registry.get("dlpack4j.model.requests").tags("model", "tiny", "outcome", "answered").counter().count())
                .isEqualTo(before + 2);
    }

    @Test
    void closingTheApplicationClosesTheModelAndTheChatModelThenRefusesCallsAndStreams() {
        ConfigurableApplicationContext other = start();
        PythonModel m = other.getBean("tiny", PythonModel.class);
        ChatModel c = other.getBean(ChatModel.class);
        assertThat(m.stats().requests()).as("calls before the first chat").isZero();
        other.close();
        assertThat(m.isClosed()).isTrue();
        assertThatThrownBy(() -> c.call("Hi")).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        List<Throwable> errors = new ArrayList<>();
        c.stream(new Prompt("Hi")).onErrorResume(e -> {
            errors.add(e);
            return Flux.empty();
        }).blockLast(WAIT);
        assertThat(errors).singleElement().isInstanceOf(IllegalStateException.class);
    }
}
