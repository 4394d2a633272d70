package dev.strata.engine.sample;

/**
 * A sampling field of a request that breaks its rule, as found by {@link SamplingParams}: names the
 * request's field ({@code top_p}, {@code max_tokens}, ...), what the message speaks of (the field,
 * or one element of it such as {@code stop[1]}), the rule and the value given. The message reads
 * {@code "<subject> must <rule>, got <value>"}; the HTTP server turns it into a 400 whose
 * {@code param} is {@link #field()}.
 *
 * <p>Immutable; any thread.
 */
public final class SamplingFieldException extends IllegalArgumentException {
    private final String field;   // the request's field name, e.g. "stop"
    private final String subject; // what the message names: the field or an element of it, e.g. "stop[1]"
    private final String rule;    // what the value must do, e.g. "be in (0, 1]"
    private final String value;   // the value given, rendered

    /**
     * @param field   the request's field name
     * @param subject the field or one element of it (starts with {@code field})
     * @param rule    what the value must do, completing "must ..."
     * @param value   the value given, rendered as the request would spell it
     */
    public SamplingFieldException(String field, String subject, String rule, String value) {
        super(subject + " must " + rule + ", got " + value);
        if (!subject.startsWith(field)) {
            throw new IllegalArgumentException("subject '" + subject + "' does not start with its field '" + field + "'");
        }
        this.field = field;
        this.subject = subject;
        this.rule = rule;
        this.value = value;
    }

    /** The request's field name, e.g. {@code top_p}. */
    public String field() {
        return field;
    }

    /** The value given, rendered. */
    public String value() {
        return value;
    }

    /**
     * The same breach under another field name, for a request that spells the field differently
     * (e.g. chat's {@code max_completion_tokens} for {@code max_tokens}).
     */
    public SamplingFieldException renamed(String newField) {
        return new SamplingFieldException(newField, newField + subject.substring(field.length()), rule, value);
    }
}
