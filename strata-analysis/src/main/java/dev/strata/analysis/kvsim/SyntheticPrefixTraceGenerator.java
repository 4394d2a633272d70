package dev.strata.analysis.kvsim;

import dev.strata.analysis.kvtrace.TraceRequest;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Generates prefix traces in the Mooncake format with the structures that make prefix caching pay:
 * shared system prompts of unequal popularity, multi-turn conversations whose every turn extends
 * the previous one, and one-off documents that are never seen again.
 *
 * <p>Model. Requests arrive as a Poisson process. Each request is, with probability
 * {@link Knobs#documentShare()}, a one-off document (a system prompt, then a long unique text);
 * otherwise the next turn of a conversation: a new one with probability
 * {@link Knobs#newConversationShare()} (or when none is open), else a turn of an open conversation
 * picked uniformly. A conversation starts with a system prompt drawn from
 * {@link Knobs#systemPrompts()} prompts with Zipf popularity (exponent {@link Knobs#zipfExponent()});
 * each turn's input is the previous turn's input, its output and a new user message, so its blocks
 * are the previous input's full blocks followed by new ones (the previous partial block changes,
 * since its text grew). A conversation ends after a geometric number of turns (mean
 * {@link Knobs#meanTurns()}) or when its context would pass {@link Knobs#maxContextTokens()}.
 * Block ids are chained: equal ids mean equal prefixes, as in Mooncake's traces.
 *
 * <p>Deterministic for a seed. Stateless between calls; any thread.
 */
public final class SyntheticPrefixTraceGenerator {

    /**
     * The generator's knobs. Token counts are drawn uniformly in {@code [min, max]}.
     *
     * @param requests             requests to generate
     * @param blockTokens          tokens per block
     * @param systemPrompts        distinct system prompts
     * @param zipfExponent         popularity skew of the prompts (0 = uniform)
     * @param systemTokensMin      shortest system prompt, tokens
     * @param systemTokensMax      longest system prompt, tokens
     * @param newConversationShare chance that a conversational request opens a new conversation
     * @param meanTurns            mean turns of a conversation (geometric, at least 1)
     * @param userTokensMin        shortest user message, tokens
     * @param userTokensMax        longest user message, tokens
     * @param outputTokensMin      shortest answer, tokens
     * @param outputTokensMax      longest answer, tokens
     * @param documentShare        share of requests that are one-off documents
     * @param documentTokensMin    shortest document, tokens
     * @param documentTokensMax    longest document, tokens
     * @param maxContextTokens     a conversation ends before its input would pass this
     * @param meanInterArrivalMs   mean time between requests, ms
     */
    public record Knobs(int requests, int blockTokens, int systemPrompts, double zipfExponent, int systemTokensMin,
                        int systemTokensMax, double newConversationShare, double meanTurns, int userTokensMin,
                        int userTokensMax, int outputTokensMin, int outputTokensMax, double documentShare,
                        int documentTokensMin, int documentTokensMax, int maxContextTokens, double meanInterArrivalMs) {
        public Knobs {
            if (requests < 0 || blockTokens <= 0 || systemPrompts <= 0 || zipfExponent < 0 || meanTurns < 1
                    || newConversationShare < 0 || newConversationShare > 1 || documentShare < 0 || documentShare > 1
                    || systemTokensMin < 0 || systemTokensMin > systemTokensMax || userTokensMin < 1 || userTokensMin > userTokensMax
                    || outputTokensMin < 0 || outputTokensMin > outputTokensMax || documentTokensMin < 1
                    || documentTokensMin > documentTokensMax || maxContextTokens <= 0 || meanInterArrivalMs < 0) {
                throw new IllegalArgumentException("inconsistent trace generator knobs: " + this);
            }
        }

        /** Chat service: many conversations of several turns, a few popular system prompts, few documents. */
        public static Knobs chat(int requests) {
            return new Knobs(requests, 512, 20, 1.1, 300, 3000, 0.3, 5, 50, 1500, 50, 600, 0.1, 4000, 30000, 120_000, 50);
        }

        /** Document analysis: mostly long one-off documents behind a handful of prompts, short conversations. */
        public static Knobs documents(int requests) {
            return new Knobs(requests, 512, 5, 0.8, 500, 2000, 0.6, 2, 100, 800, 20, 300, 0.6, 8000, 60000, 120_000, 80);
        }

        /** Agents: long, deep conversations (tool loops) over many prompts with strong skew. */
        public static Knobs agents(int requests) {
            return new Knobs(requests, 512, 200, 1.3, 1000, 8000, 0.15, 12, 200, 4000, 100, 1500, 0.05, 2000, 20000, 200_000, 30);
        }
    }

    private SyntheticPrefixTraceGenerator() {
    }

    /** A trace of {@code knobs.requests()} requests, determined by {@code seed}. */
    public static List<TraceRequest> generate(Knobs knobs, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        double[] cumulative = zipf(knobs.systemPrompts(), knobs.zipfExponent());
        long[][] prompts = new long[knobs.systemPrompts()][]; // [prompt] ids of its full blocks
        int[] promptTokens = new int[knobs.systemPrompts()];
        long nextId = 0;
        for (int p = 0; p < prompts.length; p++) {
            promptTokens[p] = between(rnd, knobs.systemTokensMin(), knobs.systemTokensMax());
            prompts[p] = new long[promptTokens[p] / knobs.blockTokens()];
            for (int i = 0; i < prompts[p].length; i++) {
                prompts[p][i] = nextId++;
            }
        }
        List<Conversation> open = new ArrayList<>();
        List<TraceRequest> out = new ArrayList<>(knobs.requests());
        double clock = 0;
        for (int r = 0; r < knobs.requests(); r++) {
            if (r > 0 && knobs.meanInterArrivalMs() > 0) {
                clock += -knobs.meanInterArrivalMs() * Math.log(1 - rnd.nextDouble());
            }
            long time = (long) clock;
            int output = between(rnd, knobs.outputTokensMin(), knobs.outputTokensMax());
            int prompt = pick(cumulative, rnd.nextDouble());
            if (rnd.nextDouble() < knobs.documentShare()) {
                int tokens = Math.min(knobs.maxContextTokens(), promptTokens[prompt] + between(rnd, knobs.documentTokensMin(), knobs.documentTokensMax()));
                long[] ids = extend(prompts[prompt], tokens, knobs.blockTokens(), nextId);
                nextId += ids.length - prompts[prompt].length;
                out.add(new TraceRequest(time, tokens, output, ids));
                continue;
            }
            Conversation c;
            int user = between(rnd, knobs.userTokensMin(), knobs.userTokensMax());
            if (open.isEmpty() || rnd.nextDouble() < knobs.newConversationShare()) {
                c = new Conversation(prompts[prompt], promptTokens[prompt], turns(rnd, knobs.meanTurns()));
                open.add(c);
            } else {
                c = open.get(rnd.nextInt(open.size()));
            }
            int tokens = c.contextTokens + user;
            if (tokens > knobs.maxContextTokens()) { // too long: this conversation is over, start afresh
                open.remove(c);
                c = new Conversation(prompts[prompt], promptTokens[prompt], turns(rnd, knobs.meanTurns()));
                open.add(c);
                tokens = Math.min(knobs.maxContextTokens(), c.contextTokens + user);
            }
            long[] ids = extend(c.fullBlocks, tokens, knobs.blockTokens(), nextId);
            nextId += ids.length - c.fullBlocks.length;
            out.add(new TraceRequest(time, tokens, output, ids));
            c.contextTokens = tokens + output;
            c.fullBlocks = Arrays.copyOf(ids, tokens / knobs.blockTokens());
            if (--c.turnsLeft == 0) {
                open.remove(c);
            }
        }
        return out;
    }

    /** Writes {@code requests} as a Mooncake-format JSONL file. */
    public static void write(List<TraceRequest> requests, Path file) {
        try (BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            StringBuilder b = new StringBuilder();
            for (TraceRequest q : requests) {
                b.setLength(0);
                b.append("{\"timestamp\": ").append(q.timestampMs()).append(", \"input_length\": ").append(q.inputLength())
                        .append(", \"output_length\": ").append(q.outputLength()).append(", \"hash_ids\": [");
                for (int i = 0; i < q.blockCount(); i++) {
                    b.append(i == 0 ? "" : ", ").append(q.hashId(i));
                }
                w.append(b).append("]}\n");
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write trace " + file + ": " + e.getMessage(), e);
        }
    }

    private static final class Conversation {
        long[] fullBlocks; // ids of the full blocks of the context so far
        int contextTokens; // tokens of the context so far (last input + its output)
        int turnsLeft;

        Conversation(long[] prompt, int promptTokens, int turns) {
            this.fullBlocks = prompt;
            this.contextTokens = promptTokens;
            this.turnsLeft = turns;
        }
    }

    /** {@code prefix}'s ids, then fresh ids from {@code nextId} up to the blocks of {@code tokens}. */
    private static long[] extend(long[] prefix, int tokens, int blockTokens, long nextId) {
        int blocks = TraceRequest.blocksFor(tokens, blockTokens);
        long[] ids = Arrays.copyOf(prefix, Math.max(blocks, prefix.length));
        for (int i = prefix.length; i < ids.length; i++) {
            ids[i] = nextId++;
        }
        return Arrays.copyOf(ids, blocks);
    }

    private static int turns(SplittableRandom rnd, double mean) {
        double p = 1 / mean; // geometric on {1, 2, ...}
        return p >= 1 ? 1 : 1 + (int) Math.floor(Math.log(1 - rnd.nextDouble()) / Math.log(1 - p));
    }

    private static int between(SplittableRandom rnd, int min, int max) {
        return min + rnd.nextInt(max - min + 1);
    }

    private static double[] zipf(int n, double s) {
        double[] c = new double[n];
        double sum = 0;
        for (int k = 0; k < n; k++) {
            sum += 1 / Math.pow(k + 1, s);
            c[k] = sum;
        }
        for (int k = 0; k < n; k++) {
            c[k] /= sum;
        }
        return c;
    }

    private static int pick(double[] cumulative, double u) {
        int i = Arrays.binarySearch(cumulative, u);
        return Math.min(cumulative.length - 1, i >= 0 ? i : -i - 1);
    }
}
