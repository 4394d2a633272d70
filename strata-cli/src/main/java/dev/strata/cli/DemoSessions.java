package dev.strata.cli;

import dev.strata.engine.synth.TextSample;
import java.util.ArrayList;
import java.util.List;

/**
 * The conversations {@code strata demo} replays: every session starts with the same system prompt
 * (the shared prefix whose KV blocks every turn of every session can reuse), and session {@code s}
 * talks about topic {@code s mod 6} of the built-in sample text, so its tokens route to that
 * topic's experts (the demo model's router is topic-clustered). User turns are sentences of the
 * topic, chosen deterministically, so two runs replay the same prompts.
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

    /** The user message of {@code turn} of {@code session}: a sentence of its topic and a question. */
    String userMessage(int session, int turn) {
        List<String> list = sentences.get(session % sentences.size());
        return list.get((turn + session / sentences.size()) % list.size()) + " Why?";
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
