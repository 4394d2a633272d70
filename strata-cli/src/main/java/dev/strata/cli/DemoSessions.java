package dev.strata.cli;

import dev.strata.engine.synth.TextSample;
import java.util.ArrayList;
import java.util.List;

/**
 * The conversations {@code strata demo} replays: every session starts with the same system prompt
 * (the shared prefix whose KV blocks every turn of every session can reuse), and session {@code s}
 * talks about topic {@code s mod 6} of the built-in sample text, so its tokens route to that
 * topic's experts (the demo model's router is topic-clustered). User turns are sentences of the
 * topic, chosen deterministically, so two runs replay the same prompts. A session's first turn
 * carries sentences of at least {@value #FIRST_TURN_CHARS} characters together (the context the
 * user brings), later turns one:
 * the first turn's blocks are the session's own prefix that the instance which computed them finds
 * again two turns later, after the turns between have pushed them out of DEVICE into its offload
 * tiers.
 *
 * <p>Immutable; any thread.
 */
final class DemoSessions {
    /** The system prompt every session shares. */
    static final String SYSTEM_PROMPT = """
            You are the assistant of a small workshop that answers questions about cooking, the night sky, \
            sailing, programming, music and gardening. Answer in short sentences, give numbers with their units, \
            and say so when you are not sure. Keep the tone friendly and plain. When a question mixes topics, \
            answer each part in turn. Never invent a source; if the user asks for one, say that you have none at \
            hand. Prefer concrete steps to general advice: what to do first, what to watch for, and when it is \
            done. Use metric units, and give temperatures in degrees Celsius. If a question is about code, show \
            the smallest example that works, then explain it line by line.""";

    private final List<List<String>> sentences = new ArrayList<>(); // per topic, in text order

    DemoSessions() {
        for (TextSample.Topic t : TextSample.topics()) {
            List<String> list = new ArrayList<>();
            for (String s : t.text().strip().split("(?<=[.!?;:])\\s+|\\n+")) {
                if (s.strip().length() >= 12) {
                    list.add(s.strip());
                }
            }
            sentences.add(list);
        }
    }

    /** The topic name of {@code session}. */
    String topic(int session) {
        return TextSample.topics().get(session % TextSample.topics().size()).name();
    }

    /** Characters of a session's first user message, at least (whole sentences). */
    static final int FIRST_TURN_CHARS = 320;

    /**
     * The user message of {@code turn} of {@code session}: consecutive sentences of its topic of at
     * least {@value #FIRST_TURN_CHARS} characters in the first turn, the next sentence in each later
     * turn, and a question.
     */
    String userMessage(int session, int turn) {
        List<String> list = sentences.get(session % sentences.size());
        int next = session / sentences.size(); // sessions beyond the topics start further into the text
        StringBuilder s = new StringBuilder();
        int used = 0; // sentences of the first turn
        do {
            s.append(list.get((next + used++) % list.size())).append(' ');
        } while (s.length() < FIRST_TURN_CHARS && used < list.size());
        if (turn == 0) {
            return s.append("Why?").toString();
        }
        return list.get((next + used - 1 + turn) % list.size()) + " Why?";
    }

    /**
     * A prompt of about the length of a first turn that shares no prefix with the sessions (for
     * cold measurements): the sample topics in another order.
     */
    String unrelatedPrompt(int index) {
        StringBuilder s = new StringBuilder("Probe " + index + ". ");
        List<TextSample.Topic> topics = TextSample.topics();
        for (int i = 0; i < topics.size() && s.length() < SYSTEM_PROMPT.length(); i++) {
            s.append(topics.get((index + i) % topics.size()).text().strip()).append(' ');
        }
        return s.toString();
    }
}
