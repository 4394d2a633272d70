package dev.strata.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code strata} command: parses arguments and hands each subcommand to the module that owns
 * its logic. Runs on the main thread.
 */
@Command(name = "strata", mixinStandardHelpOptions = true, version = "strata 0.1.0",
        description = "Memory management for LLM inference: KV-cache blocks and expert weights across tiers.",
        subcommands = {BenchCommand.class, InspectCommand.class, CommandLine.HelpCommand.class})
public final class StrataCommand implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    public static void main(String[] args) {
        CommandLine cli = new CommandLine(new StrataCommand());
        // Bad input (configuration, arguments) ends with one clear line, not a stack trace.
        cli.setExecutionExceptionHandler((e, cmd, parsed) -> {
            if (e instanceof dev.strata.cache.config.ConfigException || e instanceof IllegalArgumentException) {
                cmd.getErr().println("strata: " + e.getMessage());
                return 2;
            }
            throw e;
        });
        System.exit(cli.execute(args));
    }
}
