package dev.strata.cache.kv;

import dev.strata.cache.ObjectKey;
import java.util.ArrayList;
import java.util.List;

/**
 * One sequence's view of the KV cache: its block table (block {@code i} of the sequence lives in
 * DEVICE slot {@link #slot(int)}), the tokens it has slots for, and how many leading blocks are
 * committed under their chained keys. Created and changed only by the {@link KvBlockManager}.
 *
 * <p>Threads: the manager's scheduler thread.
 */
public final class KvSequence {
    /** Lifecycle of a sequence. */
    public enum State {
        /** Holds DEVICE blocks and may run. */
        RUNNING,
        /** Its blocks were offloaded and its slots given up; {@link KvBlockManager#resume} reloads them. */
        PREEMPTED,
        /** Released: the handle is dead. */
        RELEASED
    }

    final KvBlockManager owner;
    final long id;
    KvSequence prev; // neighbours in the manager's list of open sequences
    KvSequence next;
    final List<DeviceBlock> blocks = new ArrayList<>(4); // block table: index = block of the sequence
    int tokens; // tokens with slots: the engine may write positions [0, tokens)
    int committed; // leading blocks committed (keyed)
    ObjectKey lastKey; // key of the last committed block (the hasher's root when none)
    State state = State.RUNNING;
    ObjectKey[] preemptedKeys; // keys of the committed blocks at preemption, for resume
    StagedBlock[] staged; // [preempted block] blocks staged toward the device for the resume, null entries not staged; null if none
    PrefixMatch pending; // progressive load: the match being loaded
    int pendingNext; // progressive load: next match block not yet started
    int pendingFailedAt = -1; // progressive load: first block that could not be loaded, -1 if none

    KvSequence(KvBlockManager owner, long id, ObjectKey root) {
        this.owner = owner;
        this.id = id;
        this.lastKey = root;
    }

    /** The sequence's id (unique within its manager). */
    public long id() {
        return id;
    }

    public State state() {
        return state;
    }

    /** True while a progressive load has blocks not yet started ({@link KvBlockManager#require} them). */
    public boolean loadingProgressively() {
        return pending != null;
    }

    /** Blocks in the block table. */
    public int blockCount() {
        return blocks.size();
    }

    /** The DEVICE slot of block {@code i}. */
    public int slot(int i) {
        return blocks.get(i).slot;
    }

    /** Tokens the sequence has slots for. */
    public int tokens() {
        return tokens;
    }

    /** Leading blocks committed under their keys. */
    public int committedBlocks() {
        return committed;
    }

    /** The key of committed block {@code i}. */
    public ObjectKey key(int i) {
        if (i >= committed) {
            throw new IndexOutOfBoundsException("block " + i + " of sequence " + id + " is not committed (" + committed
                    + " are)");
        }
        return blocks.get(i).key;
    }

    @Override
    public String toString() {
        return "KvSequence[" + id + ", " + state + ", " + blocks.size() + " blocks, " + committed + " committed, "
                + tokens + " tokens]";
    }
}
