/**
 * Offline inputs of the expert/KV split configurator ({@code strata plan-split}): the KV miss curve
 * of a request trace ({@link dev.strata.analysis.split.KvBlockTrace}) and the fixed splits MV-WSA is
 * compared with ({@link dev.strata.analysis.split.ComparisonSplits}). The solver and the online
 * controller are the runtime's ({@code dev.strata.cache.split}).
 */
package dev.strata.analysis.split;
