package dev.strata.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code strata} command: parses arguments and hands each subcommand to the module that owns
 * its logic. Runs on the main thread.
 */
@Command(name = "strata", mixinStandardHelpOptions = true, version = "strata 0.1.0",
        description = "Memory management for LLM inference: KV-cache blocks and expert weights across tiers.",
        subcommands = {CommandLine.HelpCommand.class})
public final class StrataCommand implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    public static void main(String[] args) {
        System.exit(new CommandLine(new StrataCommand()).execute(args));
    }
}
