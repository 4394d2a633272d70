package dev.strata.engine.constrain;

import dev.strata.engine.constrain.GrammarNode.AnyObjectNode;
import dev.strata.engine.constrain.GrammarNode.ArrayNode;
import dev.strata.engine.constrain.GrammarNode.LiteralsNode;
import dev.strata.engine.constrain.GrammarNode.NumberNode;
import dev.strata.engine.constrain.GrammarNode.ObjectNode;
import dev.strata.engine.constrain.GrammarNode.Ref;
import dev.strata.engine.constrain.GrammarNode.SequenceNode;
import dev.strata.engine.constrain.GrammarNode.StringNode;
import dev.strata.engine.constrain.GrammarNode.UnionNode;

/**
 * Where a byte-by-byte match of the output against a {@link SchemaGrammar} stands: the top frame
 * of a stack of frames, each the unfinished value of one node, linked to the frame of the value
 * that encloses it. Frames are immutable values (records; equal stacks are equal states), so a
 * state can be branched freely while walking the vocabulary and used as a cache key.
 *
 * <p>Design note. {@link #step} feeds one byte: the top frame takes it, or, when its value may end
 * here (a number, or an enum value that is also a prefix of a longer one), the value ends and the
 * byte goes to the enclosing frame. A frame whose value is complete is replaced at once by its
 * parent's next state ({@link #finish}), so the top frame is always unfinished, or {@link Done}.
 * {@link #minRemaining} is the fewest bytes that can still complete the output (every frame's own
 * rest plus what each enclosing frame needs once its child is done): the decoder uses it to keep
 * the output finishable within the request's token budget.
 *
 * <p>Immutable; any thread.
 */
sealed interface GrammarFrame {
    /** The frame that encloses this one; null at the root. */
    GrammarFrame parent();

    /** This frame takes byte {@code b} (0..255): the new top frame, or null when it cannot. */
    GrammarFrame feed(int b);

    /** Whether this frame's value is complete if no more of it comes. */
    default boolean canEnd() {
        return false;
    }

    /** The fewest bytes that complete this frame's value (this frame on top). */
    int minToEnd();

    /** As the parent of a child being matched: the fewest bytes that complete this frame once the child is done. */
    default int minAfterChild() {
        throw new IllegalStateException(this + " has no child");
    }

    /** As the parent: the next state once the child value is done. */
    default GrammarFrame childDone() {
        throw new IllegalStateException(this + " has no child");
    }

    /** The state after a value whose frame had {@code parent} as parent is complete. */
    static GrammarFrame finish(GrammarFrame parent) {
        return parent == null ? Done.INSTANCE : parent.childDone();
    }

    /** The state after {@code b}, or null when the grammar does not allow it here. */
    static GrammarFrame step(GrammarFrame top, int b) {
        GrammarFrame f = top;
        while (true) {
            GrammarFrame next = f.feed(b);
            if (next != null) {
                return next;
            }
            if (!f.canEnd()) {
                return null;
            }
            f = finish(f.parent());
        }
    }

    /** The state after every byte of {@code bytes}, or null when the grammar does not allow them. */
    static GrammarFrame step(GrammarFrame top, byte[] bytes) {
        GrammarFrame f = top;
        for (int i = 0; i < bytes.length && f != null; i++) {
            f = step(f, bytes[i] & 0xFF);
        }
        return f;
    }

    /** Whether the output may end in this state: the whole value is complete. */
    static boolean accepting(GrammarFrame top) {
        GrammarFrame f = top;
        while (f != Done.INSTANCE) {
            if (!f.canEnd()) {
                return false;
            }
            f = finish(f.parent());
        }
        return true;
    }

    /** The fewest bytes that complete the whole output from this state. */
    static int minRemaining(GrammarFrame top) {
        long total = top.minToEnd();
        for (GrammarFrame p = top.parent(); p != null; p = p.parent()) {
            total += p.minAfterChild();
        }
        return (int) Math.min(GrammarNode.FAR, total);
    }

    /** The state before any byte of a value of {@code node}. */
    static GrammarFrame start(GrammarNode node) {
        return new Value(node, null);
    }

    /** The whole value is complete: no byte is allowed any more. */
    record Done() implements GrammarFrame {
        static final Done INSTANCE = new Done();

        @Override
        public GrammarFrame parent() {
            return null;
        }

        @Override
        public GrammarFrame feed(int b) {
            return null;
        }

        @Override
        public boolean canEnd() {
            return false;
        }

        @Override
        public int minToEnd() {
            return 0;
        }
    }

    /** Before the first byte of a value of {@code node}. */
    record Value(GrammarNode node, GrammarFrame parent) implements GrammarFrame {
        @Override
        public GrammarFrame feed(int b) {
            return open(node, parent, b);
        }

        @Override
        public int minToEnd() {
            return node.minLength;
        }

        private static GrammarFrame open(GrammarNode node, GrammarFrame parent, int b) {
            return switch (node) {
                case ObjectNode o -> b == '{' ? new Obj(o, 0, Obj.OPEN, 0, 0, 0, parent) : null;
                case AnyObjectNode a -> b == '{' ? new AnyObj(AnyObj.OPEN, parent) : null;
                case ArrayNode a -> b == '[' ? new Arr(a, 0, Arr.OPEN, parent) : null;
                case StringNode s -> b == '"' ? new Str(s, 0, 0, 0, 0, parent) : null;
                case NumberNode n -> new Num(n.integer, Num.START, 0, parent).feed(b);
                case LiteralsNode l -> new Lit(l, 0, 0, l.literals.length, parent).feed(b);
                case UnionNode u -> {
                    GrammarNode alt = u.alternativeFor(b);
                    yield alt == null ? null : open(alt, parent, b);
                }
                case SequenceNode q -> q.parts.length == 0 ? null : open(q.parts[0], new Seq(q, 0, parent), b);
                case Ref r -> open(r.target, parent, b);
            };
        }
    }

    /**
     * An object with declared properties. {@code next} is the index of the first property that may
     * still be written. While a key is being matched ({@code phase == KEY}), {@code pos} bytes of
     * it are matched and {@code [lo, hi)} are the candidate properties (keys in declaration order
     * are not sorted, so candidates are kept as the ones whose key matches so far among
     * {@code [next, lastCandidate(next)]}; lo..hi is that index window and pos the bytes matched).
     */
    record Obj(ObjectNode node, int next, int phase, int pos, int lo, int hi, GrammarFrame parent) implements GrammarFrame {
        static final int OPEN = 0;        // after '{'
        static final int AFTER_VALUE = 1; // after a property's value: ',' or '}'
        static final int AFTER_COMMA = 2; // a key must come
        static final int KEY = 3;         // in a key: pos bytes of a candidate key matched
        static final int IN_VALUE = 4;    // parent of the value of property next - 1

        @Override
        public GrammarFrame feed(int b) {
            return switch (phase) {
                case OPEN -> b == '}' && !node.requiredFrom(next) ? finish(parent) : key(b);
                case AFTER_VALUE -> {
                    if (b == ',' && next < node.size()) {
                        yield new Obj(node, next, AFTER_COMMA, 0, 0, 0, parent);
                    }
                    yield b == '}' && !node.requiredFrom(next) ? finish(parent) : null;
                }
                case AFTER_COMMA -> key(b);
                case KEY -> keyByte(lo, hi, pos, b);
                default -> null;
            };
        }

        private GrammarFrame key(int b) {
            if (next >= node.size()) {
                return null;
            }
            return keyByte(next, node.lastCandidate(next) + 1, 0, b);
        }

        /** Matches byte b at position p against the keys of candidates in [from, to) still matching. */
        private GrammarFrame keyByte(int from, int to, int p, int b) {
            int first = -1;
            int last = -1;
            int count = 0;
            for (int j = from; j < to; j++) {
                byte[] k = node.keys[j];
                if (p < k.length && matches(j, p) && (k[p] & 0xFF) == b) {
                    if (first < 0) {
                        first = j;
                    }
                    last = j;
                    count++;
                }
            }
            if (count == 0) {
                return null;
            }
            if (count == 1 && node.keys[first].length == p + 1) { // the key is complete: its value comes
                return new Value(node.values[first], new Obj(node, first + 1, IN_VALUE, 0, 0, 0, parent));
            }
            return new Obj(node, next, KEY, p + 1, first, last + 1, parent);
        }

        /** Whether candidate j's key agrees with the bytes matched so far (the first p bytes of the key of candidate lo). */
        private boolean matches(int j, int p) {
            if (p == 0 || phase != KEY) {
                return true;
            }
            byte[] ref = node.keys[lo];
            byte[] k = node.keys[j];
            return k.length >= p && java.util.Arrays.equals(ref, 0, p, k, 0, p);
        }

        @Override
        public int minToEnd() {
            return switch (phase) {
                case OPEN -> node.requiredFrom(next) ? node.requiredCost(next) : 1;
                case AFTER_VALUE -> node.requiredCost(next) + 1;
                case AFTER_COMMA -> node.costAfterComma(next);
                case KEY -> {
                    long best = GrammarNode.FAR;
                    for (int j = lo; j < hi; j++) {
                        if (matches(j, pos)) {
                            best = Math.min(best, node.keys[j].length - pos + (long) node.values[j].minLength
                                    + node.requiredCost(j + 1) + 1);
                        }
                    }
                    yield (int) Math.min(GrammarNode.FAR, best);
                }
                default -> throw new IllegalStateException("phase " + phase);
            };
        }

        @Override
        public int minAfterChild() {
            return node.requiredCost(next) + 1;
        }

        @Override
        public GrammarFrame childDone() {
            return new Obj(node, next, AFTER_VALUE, 0, 0, 0, parent);
        }
    }

    /** Any object: keys any strings, values any JSON. */
    record AnyObj(int phase, GrammarFrame parent) implements GrammarFrame {
        static final int OPEN = 0;        // after '{'
        static final int IN_KEY = 1;      // parent of the key string
        static final int KEY_DONE = 2;    // ':' must come
        static final int IN_VALUE = 3;    // parent of the value
        static final int AFTER_VALUE = 4; // ',' or '}'
        static final int AFTER_COMMA = 5; // a key must come

        @Override
        public GrammarFrame feed(int b) {
            return switch (phase) {
                case OPEN -> b == '}' ? finish(parent) : b == '"' ? new Str(SchemaGrammar.ANY_STRING, 0, 0, 0, 0, new AnyObj(IN_KEY, parent)) : null;
                case KEY_DONE -> b == ':' ? new Value(SchemaGrammar.ANY_VALUE, new AnyObj(IN_VALUE, parent)) : null;
                case AFTER_VALUE -> b == ',' ? new AnyObj(AFTER_COMMA, parent) : b == '}' ? finish(parent) : null;
                case AFTER_COMMA -> b == '"' ? new Str(SchemaGrammar.ANY_STRING, 0, 0, 0, 0, new AnyObj(IN_KEY, parent)) : null;
                default -> null;
            };
        }

        @Override
        public int minToEnd() {
            return switch (phase) {
                case OPEN, AFTER_VALUE -> 1;
                case KEY_DONE -> 3;          // ':' a one-byte value '}'
                case AFTER_COMMA -> 5;       // "":0}
                default -> throw new IllegalStateException("phase " + phase);
            };
        }

        @Override
        public int minAfterChild() {
            return phase == IN_KEY ? 3 : 1;
        }

        @Override
        public GrammarFrame childDone() {
            return new AnyObj(phase == IN_KEY ? KEY_DONE : AFTER_VALUE, parent);
        }
    }

    /** An array; {@code count} items begun so far, capped where the bounds stop caring. */
    record Arr(ArrayNode node, int count, int phase, GrammarFrame parent) implements GrammarFrame {
        static final int OPEN = 0;        // after '['
        static final int IN_VALUE = 1;    // parent of item number count
        static final int AFTER_VALUE = 2; // ',' or ']'
        static final int AFTER_COMMA = 3; // an item must come

        @Override
        public GrammarFrame feed(int b) {
            return switch (phase) {
                case OPEN -> {
                    if (b == ']' && node.minItems == 0) {
                        yield finish(parent);
                    }
                    yield node.maxItems == 0 ? null : item(b);
                }
                case AFTER_VALUE -> {
                    if (b == ',' && (node.maxItems < 0 || count < node.maxItems)) {
                        yield new Arr(node, count, AFTER_COMMA, parent);
                    }
                    yield b == ']' && count >= node.minItems ? finish(parent) : null;
                }
                case AFTER_COMMA -> item(b);
                default -> null;
            };
        }

        private GrammarFrame item(int b) {
            int c = Math.min(count + 1, node.countCap());
            return new Value(node.items, new Arr(node, c, IN_VALUE, parent)).feed(b);
        }

        @Override
        public int minToEnd() {
            return switch (phase) {
                case OPEN -> node.minItems == 0 ? 1 : node.minLength - 1;
                case AFTER_VALUE -> node.costAfterItems(count);
                case AFTER_COMMA -> {
                    long more = Math.max(1, node.minItems - count);
                    yield (int) Math.min(GrammarNode.FAR, more * node.items.minLength + (more - 1) + 1);
                }
                default -> throw new IllegalStateException("phase " + phase);
            };
        }

        @Override
        public int minAfterChild() {
            return node.costAfterItems(count);
        }

        @Override
        public GrammarFrame childDone() {
            return new Arr(node, count, AFTER_VALUE, parent);
        }
    }

    /**
     * In a string, after the opening quote. {@code chars} counts code points written (only when
     * the node bounds the length, capped one past the bound); {@code need} continuation bytes of
     * a UTF-8 sequence are still due, the first of them restricted by {@code lead} (0: 80..BF);
     * {@code escape} is 1 after a backslash, 2..5 while the hex digits of a backslash-u escape are due.
     */
    record Str(StringNode node, int chars, int need, int lead, int escape, GrammarFrame parent) implements GrammarFrame {
        @Override
        public GrammarFrame feed(int b) {
            if (escape == 1) {
                if (b == '"' || b == '\\' || b == '/' || b == 'b' || b == 'f' || b == 'n' || b == 'r' || b == 't') {
                    return new Str(node, counted(), 0, 0, 0, parent);
                }
                return b == 'u' ? new Str(node, chars, 0, 0, 2, parent) : null;
            }
            if (escape >= 2) {
                if (!(b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F')) {
                    return null;
                }
                return escape == 5 ? new Str(node, counted(), 0, 0, 0, parent) : new Str(node, chars, 0, 0, escape + 1, parent);
            }
            if (need > 0) {
                int lo = 0x80;
                int hi = 0xBF;
                if (lead == 0xE0) {
                    lo = 0xA0;
                } else if (lead == 0xED) {
                    hi = 0x9F; // no encoded surrogates
                } else if (lead == 0xF0) {
                    lo = 0x90;
                } else if (lead == 0xF4) {
                    hi = 0x8F;
                }
                if (b < lo || b > hi) {
                    return null;
                }
                return need == 1 ? new Str(node, counted(), 0, 0, 0, parent) : new Str(node, chars, need - 1, 0, 0, parent);
            }
            if (b == '"') {
                return chars >= node.minChars ? finish(parent) : null;
            }
            if (node.maxChars >= 0 && chars >= node.maxChars || b < 0x20) {
                return null;
            }
            if (b == '\\') {
                return new Str(node, chars, 0, 0, 1, parent);
            }
            if (b < 0x80) {
                return new Str(node, counted(), 0, 0, 0, parent);
            }
            if (b >= 0xC2 && b <= 0xDF) {
                return new Str(node, chars, 1, 0, 0, parent);
            }
            if (b >= 0xE0 && b <= 0xEF) {
                return new Str(node, chars, 2, b, 0, parent);
            }
            if (b >= 0xF0 && b <= 0xF4) {
                return new Str(node, chars, 3, b, 0, parent);
            }
            return null;
        }

        /** The character count after one more character. */
        private int counted() {
            return node.counts() ? Math.min(chars + 1, Math.max(node.minChars, node.maxChars + 1)) : 0;
        }

        @Override
        public int minToEnd() {
            int pending = escape == 1 ? 1 : escape >= 2 ? 6 - escape : need;
            int charsAfter = chars + (pending > 0 ? 1 : 0);
            return pending + Math.max(0, node.minChars - charsAfter) + 1;
        }
    }

    /** A number being written; {@code digits} counts the digits of the current part, capped. */
    record Num(boolean integer, int phase, int digits, GrammarFrame parent) implements GrammarFrame {
        static final int START = 0, MINUS = 1, ZERO = 2, INT = 3, DOT = 4, FRAC = 5, E = 6, E_SIGN = 7, EXP = 8;
        static final int MAX_DIGITS = 16;     // integer and fraction digits
        static final int MAX_EXP_DIGITS = 3;

        @Override
        public GrammarFrame feed(int b) {
            boolean digit = b >= '0' && b <= '9';
            return switch (phase) {
                case START -> b == '-' ? at(MINUS, 0) : b == '0' ? at(ZERO, 1) : digit ? at(INT, 1) : null;
                case MINUS -> b == '0' ? at(ZERO, 1) : digit ? at(INT, 1) : null;
                case ZERO -> fractionOrExponent(b);
                case INT -> digit && digits < MAX_DIGITS ? at(INT, digits + 1) : fractionOrExponent(b);
                case DOT -> digit ? at(FRAC, 1) : null;
                case FRAC -> digit && digits < MAX_DIGITS ? at(FRAC, digits + 1) : b == 'e' || b == 'E' ? at(E, 0) : null;
                case E -> b == '+' || b == '-' ? at(E_SIGN, 0) : digit ? at(EXP, 1) : null;
                case E_SIGN -> digit ? at(EXP, 1) : null;
                case EXP -> digit && digits < MAX_EXP_DIGITS ? at(EXP, digits + 1) : null;
                default -> null;
            };
        }

        private GrammarFrame fractionOrExponent(int b) {
            if (integer) {
                return null;
            }
            return b == '.' ? at(DOT, 0) : b == 'e' || b == 'E' ? at(E, 0) : null;
        }

        private Num at(int p, int d) {
            return new Num(integer, p, d, parent);
        }

        @Override
        public boolean canEnd() {
            return phase == ZERO || phase == INT || phase == FRAC || phase == EXP;
        }

        @Override
        public int minToEnd() {
            return canEnd() ? 0 : 1;
        }
    }

    /** One of a literal set: {@code pos} bytes matched, candidates the sorted range {@code [lo, hi)}. */
    record Lit(LiteralsNode node, int pos, int lo, int hi, GrammarFrame parent) implements GrammarFrame {
        @Override
        public GrammarFrame feed(int b) {
            int first = -1;
            int end = -1;
            for (int i = lo; i < hi; i++) {
                byte[] l = node.literals[i];
                if (l.length > pos && (l[pos] & 0xFF) == b) {
                    if (first < 0) {
                        first = i;
                    }
                    end = i + 1;
                } else if (first >= 0) {
                    break; // sorted: the matching ones are contiguous
                }
            }
            if (first < 0) {
                return null;
            }
            if (end - first == 1 && node.literals[first].length == pos + 1) {
                GrammarNode c = node.continuation(first);
                return c == null ? finish(parent) : new Value(c, parent);
            }
            return new Lit(node, pos + 1, first, end, parent);
        }

        @Override
        public boolean canEnd() {
            return node.literals[lo].length == pos; // the shortest candidate sorts first
        }

        @Override
        public int minToEnd() {
            int best = GrammarNode.FAR;
            for (int i = lo; i < hi; i++) {
                best = Math.min(best, node.costFrom(i, pos));
            }
            return best;
        }
    }

    /** Parent of part {@code index} of a sequence. */
    record Seq(SequenceNode node, int index, GrammarFrame parent) implements GrammarFrame {
        @Override
        public GrammarFrame feed(int b) {
            return null; // never on top: it only waits for its part
        }

        @Override
        public int minToEnd() {
            return node.costAfter(index);
        }

        @Override
        public int minAfterChild() {
            return node.costAfter(index);
        }

        @Override
        public GrammarFrame childDone() {
            int i = index + 1;
            return i == node.parts.length ? finish(parent) : new Value(node.parts[i], new Seq(node, i, parent));
        }
    }
}
