package dev.strata.engine.schedule;

/**
 * Picks the next token of a request from the logits after its last token. The scheduler calls it
 * on its own thread, once per generated token. A chooser with per-request state (a seeded
 * {@code Sampler}) is given to {@link Scheduler#submit(long, int[], int, TokenChooser, TokenSink)}
 * for its request alone; the scheduler's default chooser serves every request submitted without one.
 */
@FunctionalInterface
public interface TokenChooser {
    /** Greedy: the largest logit, ties to the lower token id. */
    TokenChooser GREEDY = (request, logits) -> {
        int best = 0;
        for (int i = 1; i < logits.length; i++) {
            if (logits[i] > logits[best]) {
                best = i;
            }
        }
        return best;
    };

    /**
     * @param request the request's id
     * @param logits  {@code [vocab]} logits after the request's last token; read only
     * @return a token id in {@code [0, vocab)}
     */
    int choose(long request, float[] logits);
}
