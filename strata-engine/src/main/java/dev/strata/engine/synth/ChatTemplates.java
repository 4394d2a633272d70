package dev.strata.engine.synth;

import dev.strata.engine.tokenizer.ChatFormat;

/**
 * Jinja chat templates written into synthetic {@code tokenizer_config.json} files so that other
 * tools can chat with the model. Strata itself never runs them: it renders {@link ChatFormat} in
 * Java, and these templates produce the same text for system/user/assistant messages.
 */
final class ChatTemplates {
    private ChatTemplates() {
    }

    static String jinja(ChatFormat format) {
        return switch (format) {
            case CHATML -> "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content']"
                    + " + '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
            case LLAMA3 -> "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role']"
                    + " + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
                    + "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";
            case MISTRAL_INST -> "{{ bos_token }}{% set system = namespace(text='') %}{% for message in messages %}"
                    + "{% if message['role'] == 'system' %}{% set system.text = message['content'] + '\\n\\n' %}"
                    + "{% elif message['role'] == 'user' %}{{ '[INST] ' + system.text + message['content'] + ' [/INST]' }}"
                    + "{% set system.text = '' %}{% else %}{{ message['content'] + eos_token }}{% endif %}{% endfor %}";
            case TULU -> "{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + message['content'] }}"
                    + "{% if message['role'] == 'assistant' %}{{ eos_token }}{% endif %}{{ '\\n' }}{% endfor %}"
                    + "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}";
        };
    }
}
