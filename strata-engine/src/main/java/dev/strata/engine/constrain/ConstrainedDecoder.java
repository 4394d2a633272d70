package dev.strata.engine.constrain;

import java.util.Arrays;

/**
 * Keeps one request's output inside a {@link SchemaGrammar}: before each token is chosen,
 * {@link #mask} sets the logit of every token the grammar does not allow next to negative
 * infinity; after it, {@link #accept} advances the grammar state by the token's bytes.
 *
 * <p>Design note.
 * <ul>
 *   <li><b>Masks.</b> The tokens a state allows are found in one walk of the vocabulary trie
 *       ({@link TokenVocabulary}) from the state, descending only along bytes the grammar accepts.
 *       A mask is cached per grammar and state ({@link MaskCache}), so steps that revisit a
 *       state (inside strings, between properties) cost one copy of the logits row with the mask
 *       applied. {@link #allows} checks one token by its bytes alone, for a caller that can try
 *       its choice before masking (greedy decoding without log-probabilities).</li>
 *   <li><b>Finishing within the budget.</b> With {@code r} tokens left after the next one, a
 *       token is allowed only when the output can still be completed in {@code r} bytes after it
 *       ({@link GrammarFrame#minRemaining}); every vocabulary Strata loads has a token for each
 *       single byte, so a completion of {@code r} bytes takes at most {@code r} tokens and the
 *       output is whole by the last token even for a model with random weights. A cached mask
 *       is used as it is while its {@code maxAfter} fits the budget; near the end the walk is
 *       redone with the budget (not cached). A budget too small for any completion (a
 *       {@code max_tokens} below the shortest value) gets the tokens that come closest to one;
 *       the output then ends cut at the limit, as any output does at {@code max_tokens}.</li>
 *   <li><b>Ending.</b> The end-of-sequence ids are allowed exactly when the output is complete;
 *       once nothing more can follow, they are the only tokens allowed.</li>
 * </ul>
 *
 * <p>Threads: one request's decoder, used by one thread at a time (the scheduler's).
 */
public final class ConstrainedDecoder {
    private final SchemaGrammar grammar;
    private final TokenVocabulary vocabulary;
    private final MaskCache cache;
    private final int[] endIds;       // end-of-sequence ids within the vocabulary
    private final int maxTokens;
    private GrammarFrame state;
    private int generated;            // tokens accepted so far
    private float[] row;              // [vocabulary.size()] the masked copy of the last row
    private long walks;               // masks computed by walking the trie
    private long walkNanos;           // time spent in those walks

    /**
     * @param endIds    ids that end the output (the model's end-of-sequence ids and the request's stop ids)
     * @param maxTokens the request's token budget, end token included
     */
    public ConstrainedDecoder(SchemaGrammar grammar, TokenVocabulary vocabulary, int[] endIds, int maxTokens) {
        if (maxTokens < 1) {
            throw new IllegalArgumentException("maxTokens must be >= 1, got " + maxTokens);
        }
        this.grammar = grammar;
        this.vocabulary = vocabulary;
        this.cache = grammar.masks(vocabulary);
        this.endIds = Arrays.stream(endIds).filter(i -> i >= 0 && i < vocabulary.size()).distinct().sorted().toArray();
        this.maxTokens = maxTokens;
        this.state = grammar.start();
    }

    /** Whether the output so far is complete (the grammar accepts it as it is). */
    public boolean complete() {
        return GrammarFrame.accepting(state);
    }

    /** Tokens the budget leaves after the next one. */
    private int budgetAfterNext() {
        return maxTokens - generated - 1;
    }

    /** Whether the grammar allows {@code id} next (its bytes, the budget, or an end id when complete). */
    public boolean allows(int id) {
        if (Arrays.binarySearch(endIds, id) >= 0) {
            return complete();
        }
        byte[] b = vocabulary.bytes(id);
        if (b == null) {
            return false;
        }
        GrammarFrame after = GrammarFrame.step(state, b);
        return after != null && GrammarFrame.minRemaining(after) <= budgetAfterNext();
    }

    /**
     * A copy of {@code logits[0, vocabulary.size())} with every token the grammar does not allow
     * next set to negative infinity; the array is this decoder's and is reused at the next call.
     *
     * @throws IllegalStateException when no token at all is allowed (a vocabulary that cannot
     *                               write what the grammar needs here)
     */
    public float[] mask(float[] logits) {
        int n = vocabulary.size();
        if (logits.length < n) {
            throw new IllegalArgumentException("a logits row of " + logits.length + " for a vocabulary of " + n);
        }
        long[] allowed = allowedNow();
        if (row == null) {
            row = new float[n];
        }
        boolean any = false;
        for (int w = 0, base = 0; base < n; w++, base += 64) {
            long bits = allowed[w];
            int end = Math.min(n, base + 64);
            if (bits == -1L) {
                System.arraycopy(logits, base, row, base, end - base);
                any = true;
                continue;
            }
            for (int i = base; i < end; i++) {
                boolean ok = (bits & 1L << (i - base)) != 0;
                row[i] = ok ? logits[i] : Float.NEGATIVE_INFINITY;
                any |= ok;
            }
        }
        boolean end = complete();
        int endsAllowedByBytes = 0; // end ids are decided here alone, whatever their bytes would allow
        for (int id : endIds) {
            if ((allowed[id >>> 6] & 1L << (id & 63)) != 0) {
                endsAllowedByBytes++;
            }
            row[id] = end ? logits[id] : Float.NEGATIVE_INFINITY;
        }
        if (end && endIds.length > 0) {
            any = true;
        } else if (endsAllowedByBytes > 0) {
            long count = 0;
            for (long w : allowed) {
                count += Long.bitCount(w);
            }
            any = count > endsAllowedByBytes;
        }
        if (!any) {
            throw new IllegalStateException("constrained decoding: no token of the vocabulary can continue "
                    + grammar + " after " + generated + " tokens");
        }
        return row;
    }

    /** The allowed-token bits for the current state and budget, end ids aside (the caller sets those). */
    private long[] allowedNow() {
        int budget = budgetAfterNext();
        MaskCache.Mask m = cache.get(state);
        long[] bits;
        if (m == null) {
            m = walk(Integer.MAX_VALUE);
            cache.put(state, m);
        }
        if (m.maxAfter() <= budget) {
            bits = m.allowed();
        } else if (m.minAfter() <= budget) {
            bits = walk(budget).allowed();
        } else { // a budget too small for any completion: the tokens that come closest, the output ends cut at the limit
            bits = walk(m.minAfter()).allowed();
        }
        return bits;
    }

    /** Walks the trie from the current state: the tokens whose bytes are allowed and leave at most {@code budget} bytes to finish. */
    private MaskCache.Mask walk(int budget) {
        if (state instanceof GrammarFrame.Str str && str.escape() == 0 && str.need() == 0) {
            return inString(str, budget);
        }
        long t0 = System.nanoTime();
        Marks marks = new Marks(vocabulary.size());
        int[] nodeStack = new int[64];
        GrammarFrame[] frameStack = new GrammarFrame[64];
        int top = 0;
        nodeStack[0] = 0;
        frameStack[0] = state;
        top = 1;
        int[] fc = vocabulary.firstChild;
        int[] ns = vocabulary.nextSibling;
        byte[] edge = vocabulary.edge;
        int[] ft = vocabulary.firstToken;
        int[] nt = vocabulary.nextToken;
        while (top > 0) {
            top--;
            int node = nodeStack[top];
            GrammarFrame f = frameStack[top];
            frameStack[top] = null;
            for (int c = fc[node]; c >= 0; c = ns[c]) {
                GrammarFrame after = GrammarFrame.step(f, edge[c] & 0xFF);
                if (after == null) {
                    continue;
                }
                if (ft[c] >= 0 && marks.fits(GrammarFrame.minRemaining(after), budget)) {
                    for (int id = ft[c]; id >= 0; id = nt[id]) {
                        marks.set(id);
                    }
                }
                if (fc[c] >= 0) {
                    if (top == nodeStack.length) {
                        nodeStack = Arrays.copyOf(nodeStack, top * 2);
                        frameStack = Arrays.copyOf(frameStack, top * 2);
                    }
                    nodeStack[top] = c;
                    frameStack[top] = after;
                    top++;
                }
            }
        }
        return marks.done(t0);
    }

    /**
     * The walk inside a string at a character boundary, without the trie: a plain token (whole
     * characters, no quote, backslash or control byte; {@link TokenVocabulary#plain}) keeps the
     * string open, so it is allowed when the string's length bound admits its characters, and what
     * it leaves to finish follows from its character count alone; every other token is stepped
     * byte by byte. Most of a vocabulary is plain, so this costs one pass over the ids instead of
     * a walk of every trie node.
     */
    private MaskCache.Mask inString(GrammarFrame.Str str, int budget) {
        long t0 = System.nanoTime();
        Marks marks = new Marks(vocabulary.size());
        GrammarNode.StringNode node = str.node();
        int rest = GrammarFrame.minRemaining(str) - str.minToEnd(); // what the enclosing frames need once the string ends
        long[] plain = vocabulary.plain;
        int[] chars = vocabulary.plainChars;
        for (int w = 0; w < plain.length; w++) {
            long word = plain[w];
            while (word != 0) {
                int id = (w << 6) + Long.numberOfTrailingZeros(word);
                word &= word - 1;
                int written = str.chars() + chars[id];
                if (node.maxChars >= 0 && written > node.maxChars) {
                    continue;
                }
                if (marks.fits(Math.max(0, node.minChars - written) + 1 + rest, budget)) {
                    marks.set(id);
                }
            }
        }
        for (int id : vocabulary.notPlain) {
            GrammarFrame after = GrammarFrame.step(str, vocabulary.bytes(id));
            if (after != null && marks.fits(GrammarFrame.minRemaining(after), budget)) {
                marks.set(id);
            }
        }
        return marks.done(t0);
    }

    /** The mask a walk builds: the tokens allowed and the fewest and most bytes they leave to finish. */
    private final class Marks {
        final long[] bits;                 // [ceil(size / 64)]
        int maxAfter;
        int minAfter = GrammarNode.FAR;

        Marks(int size) {
            bits = new long[(size + 63) >>> 6];
        }

        /** Counts a token the grammar allows that leaves {@code left} bytes; true when that fits the budget. */
        boolean fits(int left, int budget) {
            minAfter = Math.min(minAfter, left);
            if (left > budget) {
                return false;
            }
            maxAfter = Math.max(maxAfter, left);
            return true;
        }

        void set(int id) {
            bits[id >>> 6] |= 1L << (id & 63);
        }

        /** The mask, with the walk counted in the decoder's statistics. */
        MaskCache.Mask done(long startNanos) {
            walks++;
            walkNanos += System.nanoTime() - startNanos;
            return new MaskCache.Mask(bits, maxAfter, minAfter);
        }
    }

    /**
     * Advances past {@code id}, the token chosen.
     *
     * @throws IllegalArgumentException when the grammar does not allow it (a caller that chose
     *                                  from an unmasked row)
     */
    public void accept(int id) {
        if (Arrays.binarySearch(endIds, id) >= 0) {
            if (!complete()) {
                throw new IllegalArgumentException("end token " + id + " before the output is complete");
            }
            state = GrammarFrame.Done.INSTANCE;
            generated++;
            return;
        }
        byte[] b = vocabulary.bytes(id);
        GrammarFrame after = b == null ? null : GrammarFrame.step(state, b);
        if (after == null) {
            throw new IllegalArgumentException("token " + id + " is not allowed by " + grammar + " here");
        }
        state = after;
        generated++;
    }

    /** Masks computed by walking the vocabulary (cache misses and near-budget steps). */
    public long walks() {
        return walks;
    }

    /** Nanoseconds spent walking the vocabulary. */
    public long walkNanos() {
        return walkNanos;
    }
}
