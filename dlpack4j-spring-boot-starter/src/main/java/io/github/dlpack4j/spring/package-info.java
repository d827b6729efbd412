/**
 * Spring Boot auto-configuration for {@code dlpack4j-model}: {@link io.github.dlpack4j.spring.Dlpack4jAutoConfiguration}
 * makes the {@code dlpack4j.*} properties ({@link io.github.dlpack4j.spring.Dlpack4jProperties}) into
 * a {@link io.github.dlpack4j.python.Python} bean and one {@link io.github.dlpack4j.model.PythonModel}
 * bean per {@code dlpack4j.models.<name>} entry, with the {@code dlpack4j} health indicator, each
 * model's Micrometer meters, and the models closed after the web server's graceful shutdown. Beside
 * the model of each {@code sentence-transformers} entry comes Spring AI's {@code EmbeddingModel}, the
 * bean {@code <name>EmbeddingModel} ({@link io.github.dlpack4j.spring.SentenceTransformersEmbeddingModel}),
 * and beside that of each {@code transformers-chat} entry Spring AI's {@code ChatModel}, the bean
 * {@code <name>ChatModel} ({@link io.github.dlpack4j.spring.TransformersChatModel}), when Spring AI is
 * on the class path. A bad property fails start-up with
 * {@link io.github.dlpack4j.spring.ModelPropertyFailureAnalyzer}'s report.
 */
package io.github.dlpack4j.spring;
