package dev.strata.cache.kv;

/**
 * A {@link KvLayout} whose number of block slots can change: the slots are separate allocations in
 * a memory budget shared with something else (the expert pager), so growing takes budget and
 * shrinking gives it back.
 *
 * <p>Contract: slots are {@code [0, slots())}; {@link #growTo} adds slots at the end and either
 * succeeds or leaves the layout exactly as it was; {@link #shrinkTo} removes the last slots and
 * releases their memory before it returns. Neither moves a surviving slot's bytes.
 *
 * <p>Threads: the slot count changes only on the thread that owns the layout (the block manager's
 * scheduler thread, at a drained barrier: no transfer in flight reads or writes a slot); between
 * changes any thread may call {@link #segments} for slots that exist.
 */
public interface ResizableKvLayout extends KvLayout {

    /** Bytes of the budget one slot takes (its allocation, alignment included). */
    long bytesPerSlot();

    /**
     * Adds slots up to {@code slots} in all.
     *
     * @return false if the memory underneath refused (the layout is unchanged)
     */
    boolean growTo(int slots);

    /** Removes the slots {@code [slots, slots())} and releases their memory. */
    void shrinkTo(int slots);

    /** Copies the whole block in slot {@code from} into slot {@code to}. */
    void copySlot(int from, int to);
}
