package example;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

import dev.langchain4j.data.embedding.Embedding;

/**
 * An in-memory index of embeddings: one float matrix, {@code [rows, dimension]} in row-major order,
 * each row scaled to length 1 when it is added, so that a query's cosine similarity to every row is
 * one matrix-vector product. Exact search (every row scored), which is all a few thousand
 * paragraphs need; LangChain4j's {@code InMemoryEmbeddingStore} is in the {@code langchain4j}
 * artifact, not in {@code langchain4j-core}, which this example depends on alone.
 */
public final class VectorIndex {
    /**
     * A row of the index and its cosine similarity to the query.
     *
     * @param row    the row's index, in the order the embeddings were given
     * @param cosine the cosine similarity, -1 to 1
     */
    public record Hit(int row, double cosine) {}

    private final int dimension;
    private final int rows;
    private final float[] matrix;

    /**
     * Builds the index of the embeddings, in order.
     *
     * @param embeddings the embeddings, all of one dimension
     * @throws IllegalArgumentException if they are empty, of several dimensions, or one is zero
     */
    public VectorIndex(List<Embedding> embeddings) {
        if (embeddings.isEmpty()) {
            throw new IllegalArgumentException("no embeddings to index");
        }
        this.dimension = embeddings.getFirst().dimension();
        this.rows = embeddings.size();
        this.matrix = new float[Math.multiplyExact(rows, dimension)];
        for (int r = 0; r < rows; r++) {
            float[] v = Objects.requireNonNull(embeddings.get(r), "embedding " + r).vector();
            if (v.length != dimension) {
                throw new IllegalArgumentException("embedding " + r + " has dimension " + v.length + ", not " + dimension);
            }
            float[] unit = unit(v, "embedding " + r);
            System.arraycopy(unit, 0, matrix, r * dimension, dimension);
        }
    }

    /** {@return the number of rows} */
    public int size() {
        return rows;
    }

    /** {@return the embeddings' dimension} */
    public int dimension() {
        return dimension;
    }

    /**
     * The rows most similar to a query, by cosine similarity.
     *
     * @param query the query's embedding, of the index's dimension
     * @param k     how many hits at most
     * @return up to {@code k} hits, most similar first
     * @throws IllegalArgumentException if the query's dimension differs or it is zero
     */
    public List<Hit> search(Embedding query, int k) {
        float[] q = query.vector();
        if (q.length != dimension) {
            throw new IllegalArgumentException("the query has dimension " + q.length + ", the index " + dimension);
        }
        q = unit(q, "the query");
        double[] cosine = new double[rows];
        for (int r = 0, base = 0; r < rows; r++, base += dimension) {
            double dot = 0;
            for (int i = 0; i < dimension; i++) {
                dot += matrix[base + i] * q[i];
            }
            cosine[r] = dot;
        }
        Integer[] order = new Integer[rows];
        Arrays.setAll(order, i -> i);
        Arrays.sort(order, (a, b) -> Double.compare(cosine[b], cosine[a]));
        List<Hit> hits = new ArrayList<>(Math.min(k, rows));
        for (int i = 0; i < Math.min(k, rows); i++) {
            hits.add(new Hit(order[i], cosine[order[i]]));
        }
        return hits;
    }

    private static float[] unit(float[] v, String what) {
        double norm = 0;
        for (float x : v) {
            norm += (double) x * x;
        }
        norm = Math.sqrt(norm);
        if (norm == 0 || !Double.isFinite(norm)) {
            throw new IllegalArgumentException(what + " has length " + norm + "; a cosine needs a non-zero, finite vector");
        }
        float[] u = new float[v.length];
        for (int i = 0; i < v.length; i++) {
            u[i] = (float) (v[i] / norm);
        }
        return u;
    }
}
