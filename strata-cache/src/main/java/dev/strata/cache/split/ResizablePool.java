package dev.strata.cache.split;

/**
 * One side of a memory split that can be resized while serving: the expert slots of every MoE
 * layer, or the KV block pool. Units are what the pool counts (expert slots per layer, KV blocks);
 * {@link #bytesPerUnit()} converts them to bytes of the shared budget.
 *
 * <p>Contract: {@link #resize} is called only at a drained barrier (no step in flight uses the
 * pool). It either completes, leaving exactly {@code units} units and the pool usable, or fails
 * and leaves the pool exactly as it was (same size, same contents, usable). A shrink releases its
 * bytes before it returns, so the caller may grow the other side right after.
 *
 * <p>Threads: the caller of {@link #resize} must be the thread that drives the pool's steps (or
 * hold whatever excludes them); the getters may be read by any thread.
 */
public interface ResizablePool {

    /** A short name for reports, e.g. {@code experts} or {@code kv}. */
    String name();

    /** Units held now. */
    int units();

    /** Bytes of the budget one unit takes (for experts: one slot in every layer). */
    long bytesPerUnit();

    /** The fewest units the pool can work with. */
    int minUnits();

    /** The most units the pool can use (for experts: the experts per layer). */
    int maxUnits();

    /**
     * Resizes to {@code units} at a drained barrier.
     *
     * @return true if the pool now has {@code units} units; false if the resize was refused or
     *         failed, in which case the pool is unchanged
     * @throws IllegalArgumentException if {@code units} is outside {@code [minUnits(), maxUnits()]}
     */
    boolean resize(int units);
}
