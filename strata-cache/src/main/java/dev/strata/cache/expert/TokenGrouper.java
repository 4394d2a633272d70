package dev.strata.cache.expert;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Splits a batch's tokens into as few groups as it can find whose routed expert unions each fit a
 * capacity of {@code C} slots.
 *
 * <p>Design note. Finding the fewest groups is a set-partitioning problem (bin packing where items
 * share contents), NP-hard in general, so the grouper is a heuristic with stated guarantees:
 * <ol>
 *   <li><b>Every group fits.</b> A group's union is tracked exactly as a bit set; a token joins a
 *       group only if the union grows to at most {@code C}, and a new group starts from one token,
 *       whose distinct experts are at most {@code C} (checked: a token routing more distinct experts
 *       than {@code C} cannot run at all and is refused with an exception). Moves in the improvement
 *       pass use the same test. By induction every group's union is at most {@code C}.</li>
 *   <li><b>Every token is in exactly one group</b>, and each group lists tokens in ascending order.</li>
 *   <li><b>Optimal when the batch fits</b> (one group) and whenever the result meets the lower bound
 *       {@code ceil(|union| / C)} ({@link TokenGroups#provablyFewest()}): each group covers at most
 *       {@code C} of the union's experts.</li>
 * </ol>
 * Construction, several candidates, the one with the fewest groups kept (stopping early at the
 * lower bound): (a) <em>group fill</em>: open a group with the remaining token of most overlap (a
 * token's overlap counts the other tokens sharing each of its experts), then keep adding the
 * remaining token that brings the fewest new experts while the union fits, so clusters of tokens
 * with shared experts end up together; (b) <em>best fit</em> over tokens in three orders (most
 * overlap first, largest first, batch order): a token joins the open group it adds the fewest new
 * experts to, ties to the earliest, or opens a group. After each, an improvement pass tries to
 * empty each group, smallest first, by moving its tokens into the others. Against exhaustive search on small
 * random batches (the test {@code TokenGrouperTest}) it finds the optimum in the large majority of
 * cases and is never more than one group above it there. Cost: O(tokens² + tokens × top-K ×
 * fan-out) for the group fill, O(tokens × groups × experts / 64) per best-fit order.
 *
 * <p>Stateless; any thread.
 */
public final class TokenGrouper {

    private TokenGrouper() {
    }

    /**
     * Plans groups for one layer.
     *
     * @param routed   {@code routed[t]}: the experts token {@code t} routes to (top-K; duplicates allowed)
     * @param experts  experts in the layer; ids must lie in {@code [0, experts)}
     * @param capacity slots the layer can hold at once, {@code >= 1}
     * @throws IllegalArgumentException naming the token and the value for an id out of range, or a
     *                                  token whose distinct experts exceed {@code capacity}
     */
    public static TokenGroups plan(int[][] routed, int experts, int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be at least 1 slot, got " + capacity);
        }
        int n = routed.length;
        int words = (experts + 63) >>> 6;
        long[][] bits = new long[n][words];
        int[] size = new int[n];
        long[] union = new long[words];
        int[] frequency = new int[experts];
        for (int t = 0; t < n; t++) {
            for (int e : routed[t]) {
                if (e < 0 || e >= experts) {
                    throw new IllegalArgumentException("token " + t + " routes to expert " + e + ", outside [0, " + experts + ")");
                }
                long bit = 1L << e;
                if ((bits[t][e >>> 6] & bit) == 0) {
                    bits[t][e >>> 6] |= bit;
                    size[t]++;
                    frequency[e]++;
                }
            }
            if (size[t] > capacity) {
                throw new IllegalArgumentException("token " + t + " routes to " + size[t] + " distinct experts, more than the "
                        + capacity + " slots of the layer: no grouping can run it");
            }
            for (int w = 0; w < words; w++) {
                union[w] |= bits[t][w];
            }
        }
        int unionSize = popcount(union);
        int lowerBound = Math.max(1, (unionSize + capacity - 1) / capacity);
        if (unionSize <= capacity) {
            int[] all = new int[n];
            for (int t = 0; t < n; t++) {
                all[t] = t;
            }
            return new TokenGroups(n == 0 ? new int[0][] : new int[][] {all}, unionSize, capacity, lowerBound);
        }
        long[] overlap = new long[n];
        for (int t = 0; t < n; t++) {
            long s = 0;
            for (int w = 0; w < words; w++) {
                long b = bits[t][w];
                while (b != 0) {
                    s += frequency[(w << 6) + Long.numberOfTrailingZeros(b)] - 1;
                    b &= b - 1;
                }
            }
            overlap[t] = s;
        }
        Integer[] byOverlap = indices(n);
        Arrays.sort(byOverlap, (a, b) -> overlap[a] != overlap[b] ? Long.compare(overlap[b], overlap[a]) : Integer.compare(a, b));
        Integer[] bySize = indices(n);
        Arrays.sort(bySize, (a, b) -> size[a] != size[b] ? Integer.compare(size[b], size[a])
                : overlap[a] != overlap[b] ? Long.compare(overlap[b], overlap[a]) : Integer.compare(a, b));
        Integer[] inOrder = indices(n);
        Packing best = fill(byOverlap, bits, words, capacity, experts);
        best.improve(bits, capacity);
        for (Integer[] order : List.of(byOverlap, bySize, inOrder)) {
            if (best.groupCount() == lowerBound) {
                break;
            }
            Packing p = bestFit(order, bits, words, capacity);
            p.improve(bits, capacity);
            if (p.groupCount() < best.groupCount()) {
                best = p;
            }
        }
        return new TokenGroups(best.toGroups(), unionSize, capacity, lowerBound);
    }

    private static Integer[] indices(int n) {
        Integer[] a = new Integer[n];
        for (int i = 0; i < n; i++) {
            a[i] = i;
        }
        return a;
    }

    /**
     * Fills one group at a time: it starts from the remaining token with the most overlap and
     * repeatedly takes the remaining token that adds the fewest new experts (ties: the earliest
     * in {@code order}) while the union fits; then the next group starts. Each token's count of
     * experts missing from the open group is kept current through an expert → tokens index.
     */
    private static Packing fill(Integer[] order, long[][] bits, int words, int capacity, int experts) {
        int n = order.length;
        int[][] tokensOf = new int[experts][];
        int[] fanout = new int[experts];
        for (int t = 0; t < n; t++) {
            for (int w = 0; w < words; w++) {
                for (long b = bits[t][w]; b != 0; b &= b - 1) {
                    fanout[(w << 6) + Long.numberOfTrailingZeros(b)]++;
                }
            }
        }
        for (int e = 0; e < experts; e++) {
            tokensOf[e] = new int[fanout[e]];
            fanout[e] = 0;
        }
        for (int t = 0; t < n; t++) {
            for (int w = 0; w < words; w++) {
                for (long b = bits[t][w]; b != 0; b &= b - 1) {
                    int e = (w << 6) + Long.numberOfTrailingZeros(b);
                    tokensOf[e][fanout[e]++] = t;
                }
            }
        }
        int[] rank = new int[n];
        for (int i = 0; i < n; i++) {
            rank[order[i]] = i;
        }
        boolean[] placed = new boolean[n];
        int[] missing = new int[n];
        Packing p = new Packing(n, words);
        int left = n;
        int next = 0; // position in order of the next seed candidate
        while (left > 0) {
            while (placed[order[next]]) {
                next++;
            }
            int g = p.open();
            for (int t = 0; t < n; t++) {
                missing[t] = TokenGrouper.popcount(bits[t]);
            }
            int size = 0;
            int chosen = order[next];
            while (chosen >= 0) {
                placed[chosen] = true;
                left--;
                long[] u = p.unions.get(g);
                for (int w = 0; w < words; w++) {
                    for (long b = bits[chosen][w] & ~u[w]; b != 0; b &= b - 1) {
                        int e = (w << 6) + Long.numberOfTrailingZeros(b);
                        for (int t : tokensOf[e]) {
                            missing[t]--;
                        }
                        size++;
                    }
                }
                p.add(g, chosen, bits[chosen]);
                chosen = -1;
                int bestMissing = Integer.MAX_VALUE;
                for (int t = 0; t < n; t++) {
                    if (!placed[t] && size + missing[t] <= capacity
                            && (missing[t] < bestMissing || (missing[t] == bestMissing && rank[t] < rank[chosen]))) {
                        chosen = t;
                        bestMissing = missing[t];
                    }
                }
            }
        }
        return p;
    }

    private static Packing bestFit(Integer[] order, long[][] bits, int words, int capacity) {
        Packing p = new Packing(bits.length, words);
        for (int t : order) {
            int g = p.bestGroup(bits[t], capacity, -1);
            if (g < 0) {
                g = p.open();
            }
            p.add(g, t, bits[t]);
        }
        return p;
    }

    static int popcount(long[] set) {
        int c = 0;
        for (long w : set) {
            c += Long.bitCount(w);
        }
        return c;
    }

    /** Groups under construction: each group's union as a bit set and its tokens. */
    private static final class Packing {
        final int words;
        final int[] groupOf;                         // [tokens] group of each token
        final List<long[]> unions = new ArrayList<>(); // [groups][words] experts of each group
        final List<Integer> sizes = new ArrayList<>();  // [groups] |union| of each group
        final List<List<Integer>> members = new ArrayList<>(); // [groups] tokens of each group

        Packing(int tokens, int words) {
            this.words = words;
            this.groupOf = new int[tokens];
        }

        int groupCount() {
            return unions.size();
        }

        int open() {
            unions.add(new long[words]);
            sizes.add(0);
            members.add(new ArrayList<>());
            return unions.size() - 1;
        }

        /** Experts {@code token} would add to group {@code g}. */
        int added(int g, long[] token) {
            long[] u = unions.get(g);
            int c = 0;
            for (int w = 0; w < words; w++) {
                c += Long.bitCount(token[w] & ~u[w]);
            }
            return c;
        }

        /** The group {@code token} fits that it adds the fewest experts to (ties: earliest), not {@code except}; -1 if none. */
        int bestGroup(long[] token, int capacity, int except) {
            int best = -1;
            int bestAdded = Integer.MAX_VALUE;
            for (int g = 0; g < unions.size(); g++) {
                if (g == except) {
                    continue;
                }
                int a = added(g, token);
                if (a < bestAdded && sizes.get(g) + a <= capacity) {
                    best = g;
                    bestAdded = a;
                }
            }
            return best;
        }

        void add(int g, int t, long[] token) {
            int a = added(g, token);
            long[] u = unions.get(g);
            for (int w = 0; w < words; w++) {
                u[w] |= token[w];
            }
            sizes.set(g, sizes.get(g) + a);
            members.get(g).add(t);
            groupOf[t] = g;
        }

        /** Tries to empty groups, smallest first, by moving all their tokens into other groups. */
        void improve(long[][] bits, int capacity) {
            boolean changed = true;
            while (changed && unions.size() > 1) {
                changed = false;
                Integer[] bySize = new Integer[unions.size()];
                for (int g = 0; g < bySize.length; g++) {
                    bySize[g] = g;
                }
                Arrays.sort(bySize, (a, b) -> members.get(a).size() != members.get(b).size()
                        ? Integer.compare(members.get(a).size(), members.get(b).size()) : Integer.compare(b, a));
                for (int victim : bySize) {
                    if (tryEmpty(victim, bits, capacity)) {
                        changed = true;
                        break;
                    }
                }
            }
        }

        private boolean tryEmpty(int victim, long[][] bits, int capacity) {
            List<long[]> savedUnions = new ArrayList<>(unions.size());
            for (long[] u : unions) {
                savedUnions.add(u.clone());
            }
            List<Integer> savedSizes = new ArrayList<>(sizes);
            List<List<Integer>> savedMembers = new ArrayList<>();
            for (List<Integer> m : members) {
                savedMembers.add(new ArrayList<>(m));
            }
            int[] savedGroupOf = groupOf.clone();
            for (int t : new ArrayList<>(members.get(victim))) {
                int g = bestGroup(bits[t], capacity, victim);
                if (g < 0) {
                    for (int i = 0; i < unions.size(); i++) {
                        unions.set(i, savedUnions.get(i));
                        sizes.set(i, savedSizes.get(i));
                        members.set(i, savedMembers.get(i));
                    }
                    System.arraycopy(savedGroupOf, 0, groupOf, 0, groupOf.length);
                    return false;
                }
                add(g, t, bits[t]);
            }
            unions.remove(victim);
            sizes.remove(victim);
            members.remove(victim);
            for (int g = 0; g < members.size(); g++) {
                for (int t : members.get(g)) {
                    groupOf[t] = g;
                }
            }
            return true;
        }

        /** Token lists, each ascending, groups ordered by first token. */
        int[][] toGroups() {
            List<int[]> out = new ArrayList<>();
            for (List<Integer> m : members) {
                if (m.isEmpty()) {
                    continue;
                }
                int[] g = m.stream().mapToInt(Integer::intValue).sorted().toArray();
                out.add(g);
            }
            out.sort((a, b) -> Integer.compare(a[0], b[0]));
            return out.toArray(new int[0][]);
        }
    }
}
