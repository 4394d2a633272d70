package dev.strata.engine.tokenizer;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * Splits text into the pieces ("words") that BPE encodes separately, with the split regex of
 * the family, keeping every character: matches and the gaps between them are both pieces
 * (Hugging Face's {@code Split} with behaviour {@code Isolated}). Immutable; any thread.
 *
 * <p>The patterns are compiled by {@code java.util.regex} with
 * {@link Pattern#UNICODE_CHARACTER_CLASS}, so that {@code \s} is Unicode White_Space and
 * {@code (?i)} folds case by Unicode rules, as in the Rust regex engines the original tokenizers
 * use; {@code \p{L}} and {@code \p{N}} are the Unicode general categories in both, and
 * alternation is leftmost-first in both. The pattern text is used unchanged; the differences are
 * (1) the Unicode tables are the JDK's, which may be a Unicode version apart from the Rust crate's
 * for newly assigned characters, and (2) an unpaired UTF-16 surrogate (impossible in UTF-8 input)
 * is a character of its own to Java and falls in {@code [^\s\p{L}\p{N}]}.
 * {@link #LLAMA3} and {@link #QWEN2} are the patterns those families publish, character for
 * character; a {@code tokenizer.json} naming another regex has it compiled the same way.
 */
public final class PreTokenizer {
    /** Llama 3: digits in groups of up to 3. */
    public static final String LLAMA3 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}"
            + "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    /** Qwen2, Qwen2.5, Qwen3: as Llama 3 but every digit is its own piece. */
    public static final String QWEN2 = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
            + "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
    /** GPT-2's pattern, used by a bare ByteLevel pre-tokenizer with {@code use_regex: true}. */
    public static final String GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

    private final String regex; // null: the whole text is one piece
    private final Pattern pattern;

    private PreTokenizer(String regex, Pattern pattern) {
        this.regex = regex;
        this.pattern = pattern;
    }

    /** A pre-tokenizer splitting by {@code regex}; fails naming the regex when Java cannot compile it. */
    public static PreTokenizer of(String regex) {
        try {
            return new PreTokenizer(regex, Pattern.compile(regex, Pattern.UNICODE_CHARACTER_CLASS));
        } catch (PatternSyntaxException e) {
            throw new IllegalArgumentException("split regex " + regex + " does not compile: " + e.getDescription(), e);
        }
    }

    /** A pre-tokenizer that keeps the whole text as one piece. */
    public static PreTokenizer none() {
        return new PreTokenizer(null, null);
    }

    /** The split regex, or null. */
    public String regex() {
        return regex;
    }

    /** The pieces of {@code text}, in order; their concatenation is {@code text}. */
    public List<String> split(CharSequence text) {
        List<String> out = new ArrayList<>();
        if (text.isEmpty()) {
            return out;
        }
        if (pattern == null) {
            out.add(text.toString());
            return out;
        }
        Matcher m = pattern.matcher(text);
        int last = 0;
        while (m.find()) {
            if (m.start() > last) {
                out.add(text.subSequence(last, m.start()).toString());
            }
            if (m.end() > m.start()) {
                out.add(text.subSequence(m.start(), m.end()).toString());
            }
            last = m.end();
        }
        if (last < text.length()) {
            out.add(text.subSequence(last, text.length()).toString());
        }
        return out;
    }
}
