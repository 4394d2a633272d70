package dev.strata.engine.constrain;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;

/**
 * One node of a compiled JSON grammar: what a value at some place of the output may be. Nodes form
 * a graph (a {@link Ref} may point back up, for recursive schemas); they are compared by identity.
 * Every value is written compactly: no whitespace anywhere, object keys in the order the schema
 * declares them.
 *
 * <p>{@link #minLength} is the fewest bytes a value of the node can take; {@link SchemaGrammar}
 * computes it for the whole graph (a fixpoint, so recursion through references is finite) before
 * the grammar is used. Immutable once compiled; any thread.
 */
abstract sealed class GrammarNode {
    /** "Far": a length no completion reaches (an unsatisfiable node, or one not yet computed). */
    static final int FAR = 1 << 28;

    int minLength = FAR;             // bytes; set by SchemaGrammar's fixpoint
    final long[] first = new long[4]; // [256 bits] bytes a value may start with; set by the same fixpoint
    boolean settled;                 // both computed; never changes again

    /** The fewest bytes of a value of this node, from the lengths of its parts as known now. */
    abstract int computeMinLength();

    /** Adds to {@code into} the first bytes of this node's values, from its parts' sets as known now. */
    abstract void computeFirst(long[] into);

    /** Whether a value of this node may start with byte {@code b} (0..255). */
    final boolean mayStartWith(int b) {
        return (first[b >>> 6] & 1L << (b & 63)) != 0;
    }

    static void addByte(long[] set, int b) {
        set[b >>> 6] |= 1L << (b & 63);
    }

    static void addAll(long[] set, long[] more) {
        for (int i = 0; i < 4; i++) {
            set[i] |= more[i];
        }
    }

    /** An object with declared properties, written in declaration order; optional ones may be left out. */
    static final class ObjectNode extends GrammarNode {
        final String[] names;          // [n] property names, declaration order
        final byte[][] keys;           // [n] the key as written: '"' name '"' ':'
        final GrammarNode[] values;    // [n]
        final boolean[] required;      // [n]

        ObjectNode(List<String> names, List<GrammarNode> values, List<Boolean> required) {
            int n = names.size();
            this.names = names.toArray(String[]::new);
            this.keys = new byte[n][];
            for (int i = 0; i < n; i++) {
                keys[i] = (SchemaGrammar.quote(this.names[i]) + ":").getBytes(StandardCharsets.UTF_8);
            }
            this.values = values.toArray(GrammarNode[]::new);
            this.required = new boolean[n];
            for (int i = 0; i < n; i++) {
                this.required[i] = required.get(i);
            }
        }

        int size() {
            return names.length;
        }

        /** Whether some property at index {@code from} or later must still be written. */
        boolean requiredFrom(int from) {
            for (int j = from; j < required.length; j++) {
                if (required[j]) {
                    return true;
                }
            }
            return false;
        }

        /** The last index a key written next may have when the properties before {@code from} are done: up to the first required one. */
        int lastCandidate(int from) {
            for (int j = from; j < required.length; j++) {
                if (required[j]) {
                    return j;
                }
            }
            return required.length - 1;
        }

        /** Bytes for the required properties at {@code from} and later, each with one separator (comma or the closing brace). */
        int requiredCost(int from) {
            long c = 0;
            for (int j = from; j < required.length; j++) {
                if (required[j]) {
                    c += keys[j].length + (long) values[j].minLength + 1;
                }
            }
            return (int) Math.min(FAR, c);
        }

        /** The fewest bytes to finish after a comma: the required rest, or, with none, the cheapest optional property and the brace. */
        int costAfterComma(int from) {
            if (requiredFrom(from)) {
                return requiredCost(from);
            }
            long best = FAR;
            for (int j = from; j < required.length; j++) {
                best = Math.min(best, keys[j].length + (long) values[j].minLength + 1);
            }
            return (int) Math.min(FAR, best);
        }

        @Override
        int computeMinLength() {
            int r = requiredCost(0);
            return r == 0 ? 2 : Math.min(FAR, 1 + r);
        }

        @Override
        void computeFirst(long[] into) {
            addByte(into, '{');
        }
    }

    /** Any JSON object (keys any strings, values any JSON). */
    static final class AnyObjectNode extends GrammarNode {
        @Override
        int computeMinLength() {
            return 2;
        }

        @Override
        void computeFirst(long[] into) {
            addByte(into, '{');
        }
    }

    /** An array of items of one node, with bounds on the count. */
    static final class ArrayNode extends GrammarNode {
        final GrammarNode items;
        final int minItems;
        final int maxItems; // -1: unbounded

        ArrayNode(GrammarNode items, int minItems, int maxItems) {
            this.items = items;
            this.minItems = minItems;
            this.maxItems = maxItems;
        }

        /** The count past which the exact number no longer matters to the grammar. */
        int countCap() {
            return Math.max(minItems, maxItems < 0 ? 0 : maxItems);
        }

        /** Bytes to finish when {@code count} items are written and the last one is done: more items with commas, then ']'. */
        int costAfterItems(int count) {
            long more = Math.max(0, minItems - count);
            return (int) Math.min(FAR, more * (1L + items.minLength) + 1);
        }

        @Override
        int computeMinLength() {
            if (minItems == 0) {
                return 2;
            }
            return (int) Math.min(FAR, 2L + (long) minItems * items.minLength + (minItems - 1));
        }

        @Override
        void computeFirst(long[] into) {
            addByte(into, '[');
        }
    }

    /** A string, with bounds on its length in code points. */
    static final class StringNode extends GrammarNode {
        final int minChars;
        final int maxChars; // -1: unbounded

        StringNode(int minChars, int maxChars) {
            this.minChars = minChars;
            this.maxChars = maxChars;
        }

        /** Whether the count of characters written matters (a bound exists). */
        boolean counts() {
            return minChars > 0 || maxChars >= 0;
        }

        @Override
        int computeMinLength() {
            return 2 + minChars;
        }

        @Override
        void computeFirst(long[] into) {
            addByte(into, '"');
        }
    }

    /** A number; an integer has neither fraction nor exponent. */
    static final class NumberNode extends GrammarNode {
        final boolean integer;

        NumberNode(boolean integer) {
            this.integer = integer;
        }

        @Override
        int computeMinLength() {
            return 1;
        }

        @Override
        void computeFirst(long[] into) {
            addByte(into, '-');
            for (int d = '0'; d <= '9'; d++) {
                addByte(into, d);
            }
        }
    }

    /**
     * One of a fixed set of byte strings (an enum, a constant, true/false/null, a tool's name),
     * each optionally followed by a value of a continuation node. Sorted by unsigned bytes, so the
     * literals that share a prefix are a contiguous range. With continuations, no literal is a
     * prefix of another (checked), so the literal is known the moment it ends.
     */
    static final class LiteralsNode extends GrammarNode {
        final byte[][] literals;          // sorted, distinct
        final GrammarNode[] continuations; // [literals.length], entries may be null; null array: none at all

        LiteralsNode(List<byte[]> literals, List<GrammarNode> continuations) {
            Integer[] order = new Integer[literals.size()];
            for (int i = 0; i < order.length; i++) {
                order[i] = i;
            }
            Arrays.sort(order, Comparator.comparing(literals::get, Arrays::compareUnsigned));
            this.literals = new byte[order.length][];
            this.continuations = continuations == null ? null : new GrammarNode[order.length];
            for (int i = 0; i < order.length; i++) {
                this.literals[i] = literals.get(order[i]);
                if (continuations != null) {
                    this.continuations[i] = continuations.get(order[i]);
                }
                if (i > 0 && Arrays.equals(this.literals[i - 1], this.literals[i])) {
                    throw new IllegalArgumentException("a literal is listed twice: " + new String(this.literals[i], StandardCharsets.UTF_8));
                }
            }
            if (this.continuations != null) {
                for (int i = 1; i < this.literals.length; i++) {
                    byte[] a = this.literals[i - 1];
                    byte[] b = this.literals[i];
                    if (a.length <= b.length && Arrays.equals(a, 0, a.length, b, 0, a.length)) {
                        throw new IllegalArgumentException("literal '" + new String(a, StandardCharsets.UTF_8)
                                + "' is a prefix of '" + new String(b, StandardCharsets.UTF_8) + "'");
                    }
                }
            }
        }

        static LiteralsNode of(String... texts) {
            return new LiteralsNode(Arrays.stream(texts).map(t -> t.getBytes(StandardCharsets.UTF_8)).toList(), null);
        }

        GrammarNode continuation(int i) {
            return continuations == null ? null : continuations[i];
        }

        int costFrom(int i, int pos) {
            GrammarNode c = continuation(i);
            return (int) Math.min(FAR, literals[i].length - pos + (c == null ? 0L : c.minLength));
        }

        @Override
        int computeMinLength() {
            int best = FAR;
            for (int i = 0; i < literals.length; i++) {
                best = Math.min(best, costFrom(i, 0));
            }
            return best;
        }

        @Override
        void computeFirst(long[] into) {
            for (int i = 0; i < literals.length; i++) {
                if (literals[i].length > 0) {
                    addByte(into, literals[i][0] & 0xFF);
                } else if (continuation(i) != null) {
                    addAll(into, continuation(i).first);
                }
            }
        }
    }

    /** One of several nodes, told apart by their first byte (checked when compiled). */
    static final class UnionNode extends GrammarNode {
        final GrammarNode[] alternatives;

        UnionNode(List<GrammarNode> alternatives) {
            this.alternatives = alternatives.toArray(GrammarNode[]::new);
        }

        /** The alternative a value starting with {@code b} belongs to, or null. */
        GrammarNode alternativeFor(int b) {
            for (GrammarNode a : alternatives) {
                if (a.mayStartWith(b)) {
                    return a;
                }
            }
            return null;
        }

        @Override
        int computeMinLength() {
            int best = FAR;
            for (GrammarNode a : alternatives) {
                best = Math.min(best, a.minLength);
            }
            return best;
        }

        @Override
        void computeFirst(long[] into) {
            for (GrammarNode a : alternatives) {
                addAll(into, a.first);
            }
        }
    }

    /** Parts written one after another (fixed text around a value, as a tool call's markers). */
    static final class SequenceNode extends GrammarNode {
        final GrammarNode[] parts;

        SequenceNode(List<GrammarNode> parts) {
            this.parts = parts.toArray(GrammarNode[]::new);
        }

        /** Bytes of the parts after {@code index}. */
        int costAfter(int index) {
            long c = 0;
            for (int i = index + 1; i < parts.length; i++) {
                c += parts[i].minLength;
            }
            return (int) Math.min(FAR, c);
        }

        @Override
        int computeMinLength() {
            return costAfter(-1);
        }

        @Override
        void computeFirst(long[] into) {
            if (parts.length > 0) {
                addAll(into, parts[0].first); // a part never matches the empty string
            }
        }
    }

    /** A reference to a node defined elsewhere in the schema ({@code $ref}); its target is set once compiled. */
    static final class Ref extends GrammarNode {
        final String pointer;
        GrammarNode target;

        Ref(String pointer) {
            this.pointer = pointer;
        }

        @Override
        int computeMinLength() {
            return target.minLength;
        }

        @Override
        void computeFirst(long[] into) {
            addAll(into, target.first);
        }
    }
}
