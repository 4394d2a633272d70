package dev.strata.bench;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonValue;

/**
 * What a figure's measurement says about its goal, given its spread ({@link Goal#judge}).
 */
public enum Verdict {
    /** The whole spread meets the goal. */
    MET("met"),
    /** No part of the spread meets the goal. */
    MISSED("missed"),
    /** The spread straddles the goal: this run cannot tell. */
    INCONCLUSIVE("inconclusive"),
    /** Not judged: a quick run, or nothing measured to judge. */
    NOT_JUDGED("not judged");

    private final String label;

    Verdict(String label) {
        this.label = label;
    }

    /** The word written in reports and JSON, e.g. {@code not judged}. */
    @JsonValue
    public String label() {
        return label;
    }

    /**
     * The verdict written as {@code label}.
     *
     * @throws IllegalArgumentException naming the text if no verdict has it
     */
    @JsonCreator
    public static Verdict ofLabel(String label) {
        for (Verdict v : values()) {
            if (v.label.equals(label)) {
                return v;
            }
        }
        throw new IllegalArgumentException("not a verdict: '" + label + "' (expected met, missed, inconclusive or not judged)");
    }
}
