package dev.strata.engine.synth;

import dev.strata.engine.model.ModelFamily;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/**
 * The real chat templates of each family's instruct checkpoints, written into synthetic
 * {@code tokenizer_config.json} files so that synthetic models are chatted with through the same
 * template path as real ones. The templates are the checkpoints' own {@code chat_template} strings,
 * kept as resources under {@code dev/strata/engine/synth/chat-templates/} (their origins are listed
 * in the chat-template test fixtures' README). Stateless; any thread.
 */
final class ChatTemplates {
    private static final String DIR = "/dev/strata/engine/synth/chat-templates/";

    private ChatTemplates() {
    }

    /** The chat template of {@code family}'s instruct checkpoints. */
    static String jinja(ModelFamily family) {
        String name = switch (family) {
            case QWEN3_MOE, QWEN3 -> "qwen3.jinja"; // Qwen3 and Qwen3-MoE share one template
            case LLAMA -> "llama-3.2-instruct.jinja";
            case MIXTRAL -> "mixtral-8x7b-instruct-v0.1.jinja";
            case OLMOE -> "olmo-tulu.jinja";
        };
        try (InputStream in = ChatTemplates.class.getResourceAsStream(DIR + name)) {
            if (in == null) {
                throw new IllegalStateException("chat template resource " + DIR + name + " is missing from the build");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read chat template resource " + DIR + name, e);
        }
    }
}
