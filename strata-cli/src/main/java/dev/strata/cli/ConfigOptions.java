package dev.strata.cli;

import dev.strata.cache.config.ConfigLoader;
import dev.strata.cache.config.StrataConfig;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * The configuration options every subcommand that builds tiers shares: a YAML file and
 * {@code --set key=value} overrides (the {@code STRATA_SET} environment variable is read too).
 * Confined to the main thread.
 */
final class ConfigOptions {

    @Option(names = {"-c", "--config"}, paramLabel = "FILE", description = "YAML configuration file")
    Path file;

    @Option(names = "--set", paramLabel = "KEY=VALUE",
            description = "override one setting, e.g. --set tiers.host.capacity=8GiB (repeatable)")
    List<String> settings = new ArrayList<>();

    /** The configuration, checked as a whole. */
    StrataConfig load() {
        return load(java.util.List.of(), new Shorthands());
    }

    /**
     * The configuration from the command's {@code defaults}, the file, {@code STRATA_SET},
     * {@code --set} and the command's shorthand flags ({@code shorthands}, applied last), checked
     * as a whole; its process-wide memory settings ({@code memory.huge-pages},
     * {@code memory.non-temporal-copies}) are applied.
     */
    StrataConfig load(List<String> defaults, Shorthands shorthands) {
        try {
            StrataConfig config = ConfigLoader.load(defaults, file, settings, System.getenv(ConfigLoader.ENV_SETTINGS),
                    shorthands.settings()).conclude();
            config.memory().apply(); // process-wide, before any tier reserves its memory
            return config;
        } catch (dev.strata.cache.config.ConfigException e) {
            throw shorthands.explain(e);
        }
    }
}
