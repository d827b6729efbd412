package io.github.dlpack4j.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;

import io.github.dlpack4j.model.ModelTimeoutException;
import io.github.dlpack4j.model.PythonModel;

import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.model.ChatModel;
import org.springframework.ai.chat.prompt.ChatOptions;
import org.springframework.ai.chat.prompt.Prompt;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** A chat entry's {@code stream-timeout}: the deadline of a whole generation, streamed or called. */
class ChatDeadlinesTest {
    @Test
    void aStreamTimeoutFailsALongCallAndALongStreamWithModelTimeoutExceptionAndShortOnesAreAnswered() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(Dlpack4jAutoConfiguration.class))
                .withPropertyValues("dlpack4j.models.tiny.transformers-chat=" + TinyLm.DIR, "dlpack4j.models.tiny.stream-timeout=300ms",
                        "dlpack4j.models.tiny.chat.max-new-tokens=1000")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    ChatModel chat = context.getBean(ChatModel.class);
                    PythonModel model = context.getBean("tiny", PythonModel.class);
                    String p = TinyLm.PROMPTS.getFirst();
                    assertThatThrownBy(() -> chat.call(p)).isInstanceOf(ModelTimeoutException.class);
                    assertThatThrownBy(() -> chat.stream(new Prompt(p)).blockLast(Duration.ofSeconds(60)))
                            .isInstanceOf(ModelTimeoutException.class);
                    assertThat(model.stats().timedOut()).isEqualTo(2);
                    assertThat(chat.call(new Prompt(p, ChatOptions.builder().maxTokens(2).build())).getResult().getOutput().getText())
                            .isEqualTo(TinyLm.generate(p, 2).text());
                });
    }
}
