/**
 * Request traces of KV prefix sharing: the Mooncake / aiperf JSON-lines format (one request per
 * line with its prefix-block hashes), read as a stream with errors that name the file, the line
 * and the problem. The replay simulator, the memory-split configurator and the trace tools all
 * read traces through {@link dev.strata.analysis.kvtrace.MooncakeTraceReader}.
 */
package dev.strata.analysis.kvtrace;
