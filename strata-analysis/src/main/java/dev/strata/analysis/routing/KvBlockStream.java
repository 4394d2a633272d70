package dev.strata.analysis.routing;

import java.util.function.LongConsumer;

/**
 * A stream of KV-block references: the other half of the expert/KV split. Each reference is a
 * block id (a prefix hash: equal ids are the same KV content, shareable). Implementations:
 * {@link SyntheticKvBlockStream} (generated multi-turn sessions) and {@link MooncakeKvBlockStream}
 * (the Mooncake request trace's {@code hash_ids}).
 */
public interface KvBlockStream {

    /** Hands every reference, in order, to {@code blocks}. May be called again: it replays the same stream. */
    void forEach(LongConsumer blocks);

    /** One line saying what the stream is. */
    String describe();
}
