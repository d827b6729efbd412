package io.github.dlpack4j;

/**
 * The {@link ExportPool}s of one owning tensor, one per ABI, and when to make them: on the
 * tensor's second export in that ABI, so that a tensor exported once never pays for a pool. Made
 * with the tensor (views have none: see {@link ExportPool}); closed when the tensor is. Taking a
 * pool that exists is two loads; making one is rare (once per tensor and ABI) and takes this
 * object's lock.
 */
final class ExportPools {
    private volatile ExportPool versionedPool;
    private volatile ExportPool legacyPool;
    /** Exports made without a pool (racy counts: they only decide when a pool is worth making). */
    private int versionedExports;
    private int legacyExports;

    /**
     * The pool for {@code owner}'s exports in one ABI, or null while it has been exported only once
     * that way, or once it is closed. Its blocks are freed when {@link #close()} runs or
     * {@code owner} becomes unreachable.
     *
     * @param owner the owning tensor these pools belong to
     */
    ExportPool get(Tensor owner, boolean versioned) {
        ExportPool pool = versioned ? versionedPool : legacyPool;
        return pool != null ? pool : newExportPool(owner, versioned);
    }

    /** Counts an export without a pool, and from the second one on makes the pool (unless the tensor is closed). */
    private ExportPool newExportPool(Tensor owner, boolean versioned) {
        ExportPool pool;
        if ((versioned ? versionedExports++ : legacyExports++) == 0) {
            return null;
        }
        synchronized (this) { // rare: once per tensor and ABI
            pool = versioned ? versionedPool : legacyPool;
            if (pool == null && !owner.isClosed()) {
                pool = ExportPool.create(owner, versioned);
                if (versioned) {
                    versionedPool = pool;
                } else {
                    legacyPool = pool;
                }
                if (owner.isClosed()) { // closed meanwhile, perhaps without seeing the pool
                    pool.close();
                }
            }
        }
        return pool;
    }

    /** Closes the pools made so far (their blocks out are freed by their deleters); the tensor was just closed. */
    void close() {
        closePool(versionedPool);
        closePool(legacyPool);
    }

    /** Closes {@code pool} unless it was never made. */
    private static void closePool(ExportPool pool) {
        if (pool != null) {
            pool.close();
        }
    }
}
