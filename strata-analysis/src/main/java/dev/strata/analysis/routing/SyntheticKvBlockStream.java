package dev.strata.analysis.routing;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.function.LongConsumer;

/**
 * KV-block references of multi-turn sessions: every turn of a session reads its whole context
 * (a prefix shared by every session, such as a system prompt, then every earlier turn's blocks,
 * then the new prompt's blocks) and writes the blocks of its answer, which later turns read.
 * {@code concurrency} sessions are active at once; each next turn comes from one of them at random
 * (seeded), so sessions interleave and their contexts compete for the cache. Deterministic for a
 * seed.
 *
 * <p>Block ids: the shared prefix is {@code 0..sharedPrefixBlocks-1}; session {@code s}'s own
 * blocks are {@code (s + 1) << 32 | n}. Stateless between calls; any thread may call
 * {@link #forEach}.
 *
 * @param sessions           sessions in the stream
 * @param concurrency        sessions active at once
 * @param turns              turns per session
 * @param sharedPrefixBlocks blocks of the prefix every session starts with
 * @param firstPromptBlocks  blocks of a session's first prompt, after the shared prefix
 * @param promptBlocks       new prompt blocks of each later turn
 * @param answerBlocks       blocks each turn's answer adds
 * @param seed               randomness of the interleaving
 */
public record SyntheticKvBlockStream(int sessions, int concurrency, int turns, int sharedPrefixBlocks, int firstPromptBlocks,
                                     int promptBlocks, int answerBlocks, long seed) implements KvBlockStream {

    /** @throws IllegalArgumentException naming the knob out of range */
    public SyntheticKvBlockStream {
        if (sessions < 1 || concurrency < 1 || turns < 1) {
            throw new IllegalArgumentException("sessions, concurrency and turns must be at least 1, got " + sessions + ", "
                    + concurrency + ", " + turns);
        }
        if (sharedPrefixBlocks < 0 || firstPromptBlocks < 0 || promptBlocks < 0 || answerBlocks < 0) {
            throw new IllegalArgumentException("block counts must not be negative, got prefix " + sharedPrefixBlocks
                    + ", first prompt " + firstPromptBlocks + ", prompt " + promptBlocks + ", answer " + answerBlocks);
        }
    }

    /** A small agentic default: 16 sessions, 4 at a time, 6 turns, 8 shared prefix blocks. */
    public static SyntheticKvBlockStream defaults(long seed) {
        return new SyntheticKvBlockStream(16, 4, 6, 8, 24, 4, 2, seed);
    }

    @Override
    public void forEach(LongConsumer blocks) {
        SplittableRandom random = new SplittableRandom(seed);
        List<int[]> active = new ArrayList<>(); // {session, turns done, own blocks so far}
        int next = 0;
        while (next < sessions || !active.isEmpty()) {
            while (active.size() < concurrency && next < sessions) {
                active.add(new int[] {next++, 0, 0});
            }
            int pick = random.nextInt(active.size());
            int[] s = active.get(pick);
            long base = (long) (s[0] + 1) << 32;
            for (int b = 0; b < sharedPrefixBlocks; b++) {
                blocks.accept(b);
            }
            int prompt = s[1] == 0 ? firstPromptBlocks : promptBlocks;
            int context = s[2] + prompt; // earlier turns' blocks, then the new prompt
            for (int b = 0; b < context; b++) {
                blocks.accept(base | b);
            }
            for (int b = 0; b < answerBlocks; b++) {
                blocks.accept(base | (context + b));
            }
            s[2] = context + answerBlocks;
            if (++s[1] == turns) {
                active.remove(pick);
            }
        }
    }

    @Override
    public String describe() {
        return String.format(Locale.ROOT, "synthetic KV: %d sessions (%d at a time) × %d turns, shared prefix %d blocks, "
                + "first prompt %d, +%d prompt and +%d answer blocks per turn", sessions, concurrency, turns, sharedPrefixBlocks,
                firstPromptBlocks, promptBlocks, answerBlocks);
    }
}
