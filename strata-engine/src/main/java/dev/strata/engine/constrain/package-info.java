/**
 * Constrained decoding: outputs that must be JSON, a value of a JSON Schema, or a tool call.
 * {@link dev.strata.engine.constrain.SchemaGrammar} compiles what is allowed into a byte-level
 * grammar; {@link dev.strata.engine.constrain.TokenVocabulary} holds each token's bytes in a trie;
 * {@link dev.strata.engine.constrain.ConstrainedDecoder} masks, at every step of one request, the
 * tokens whose bytes the grammar does not allow, and keeps the output finishable within its
 * token budget.
 */
package dev.strata.engine.constrain;
