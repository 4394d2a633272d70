package dev.strata.engine.tokenizer;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The ranked merges of a BPE vocabulary and the merge loop that applies them to one piece's
 * symbols; byte-level and SentencePiece-style tokenizers share it and differ only in how a piece
 * becomes its first symbols. The loop merges, until no adjacent pair has a merge, the adjacent pair
 * of lowest rank, the leftmost on ties (as the Hugging Face BPE model does): a binary heap of
 * (rank, position) over a linked list of symbols makes one piece O(n log n).
 *
 * <p>Invariants: every merge's parts and their concatenation are vocabulary tokens; when a pair
 * appears in several merges the lowest rank is kept. Immutable; any thread.
 */
final class BpeMerges {
    private final Map<Long, Integer> rankOf; // (leftId << 32 | rightId) -> rank
    private final int[] mergedId;            // rank -> id of the merged token

    /** Resolves {@code merges} (rank -> (left, right)) against {@code vocab}; fails naming a merge whose token is missing. */
    BpeMerges(Map<String, Integer> vocab, List<String[]> merges) {
        rankOf = new HashMap<>(merges.size() * 2);
        mergedId = new int[merges.size()];
        for (int r = 0; r < merges.size(); r++) {
            String[] m = merges.get(r);
            Integer a = vocab.get(m[0]);
            Integer b = vocab.get(m[1]);
            Integer ab = vocab.get(m[0] + m[1]);
            if (a == null || b == null || ab == null) {
                String missing = a == null ? m[0] : b == null ? m[1] : m[0] + m[1];
                throw new IllegalArgumentException("merge " + r + " '" + m[0] + " " + m[1] + "' needs '" + missing
                        + "', which is not in the vocabulary");
            }
            rankOf.putIfAbsent(key(a, b), r);
            mergedId[r] = ab;
        }
    }

    private static long key(int a, int b) {
        return ((long) a << 32) | (b & 0xFFFFFFFFL);
    }

    /** Merges {@code sym} (token ids, modified in place) by rank; returns the resulting ids. */
    int[] merge(int[] sym) {
        int n = sym.length;
        if (n < 2) {
            return sym;
        }
        int[] next = new int[n];
        int[] prev = new int[n];
        for (int i = 0; i < n; i++) {
            next[i] = i + 1 < n ? i + 1 : -1;
            prev[i] = i - 1;
        }
        LongHeap heap = new LongHeap(n);
        for (int i = 0; i + 1 < n; i++) {
            push(heap, sym, i, i + 1);
        }
        boolean[] dead = new boolean[n];
        int alive = n;
        while (!heap.isEmpty()) {
            long top = heap.poll();
            int rank = (int) (top >>> 32);
            int pos = (int) top;
            if (dead[pos]) {
                continue;
            }
            int right = next[pos];
            if (right < 0) {
                continue;
            }
            Integer r = rankOf.get(key(sym[pos], sym[right]));
            if (r == null || r != rank) {
                continue; // stale: a neighbour changed since this pair was queued
            }
            sym[pos] = mergedId[rank];
            dead[right] = true;
            alive--;
            next[pos] = next[right];
            if (next[right] >= 0) {
                prev[next[right]] = pos;
            }
            if (prev[pos] >= 0) {
                push(heap, sym, prev[pos], pos);
            }
            if (next[pos] >= 0) {
                push(heap, sym, pos, next[pos]);
            }
        }
        int[] out = new int[alive];
        int k = 0;
        for (int i = 0; i >= 0; i = next[i]) {
            out[k++] = sym[i];
        }
        return out;
    }

    private void push(LongHeap heap, int[] sym, int left, int right) {
        Integer r = rankOf.get(key(sym[left], sym[right]));
        if (r != null) {
            heap.add(((long) r << 32) | left);
        }
    }

    /** A binary min-heap of longs. */
    private static final class LongHeap {
        long[] a;
        int n;

        LongHeap(int capacity) {
            a = new long[Math.max(4, capacity)];
        }

        boolean isEmpty() {
            return n == 0;
        }

        void add(long v) {
            if (n == a.length) {
                a = Arrays.copyOf(a, n * 2);
            }
            int i = n++;
            while (i > 0) {
                int p = (i - 1) >>> 1;
                if (a[p] <= v) {
                    break;
                }
                a[i] = a[p];
                i = p;
            }
            a[i] = v;
        }

        long poll() {
            long top = a[0];
            long v = a[--n];
            int i = 0;
            while (true) {
                int c = 2 * i + 1;
                if (c >= n) {
                    break;
                }
                if (c + 1 < n && a[c + 1] < a[c]) {
                    c++;
                }
                if (a[c] >= v) {
                    break;
                }
                a[i] = a[c];
                i = c;
            }
            a[i] = v;
            return top;
        }
    }
}
