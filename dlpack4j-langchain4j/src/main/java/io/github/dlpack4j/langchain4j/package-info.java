/**
 * Python text models as LangChain4j's models: {@link io.github.dlpack4j.langchain4j.PythonEmbeddingModel}
 * (any sentence-transformers model as an {@code EmbeddingModel}) and
 * {@link io.github.dlpack4j.langchain4j.PythonScoringModel} (a cross-encoder as a {@code ScoringModel}),
 * run by their own Python in the JVM's process through {@code dlpack4j-model}, batched across threads.
 */
package io.github.dlpack4j.langchain4j;
