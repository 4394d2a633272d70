/** Benchmark scenarios, JMH benchmarks and reports. */
package dev.strata.bench;
