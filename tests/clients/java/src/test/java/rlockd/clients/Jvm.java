package rlockd.clients;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Another JVM on this classpath, told about the same servers. */
final class Jvm {
    private Jvm() {}

    /** Starts `main` with its output on this JVM's; `pipe` keeps its stdout for the caller instead. */
    static Process start(Class<?> main, boolean pipe) throws IOException {
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp", System.getProperty("java.class.path"),
                "-Drlockd.ports=" + Servers.port(), "-Drlockd.server=" + Servers.name()));
        if (Servers.password() != null) {
            command.add("-Drlockd.password=" + Servers.password());
        }
        command.add(main.getName());
        ProcessBuilder builder = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT);
        return (pipe ? builder : builder.redirectOutput(ProcessBuilder.Redirect.INHERIT)).start();
    }
}
