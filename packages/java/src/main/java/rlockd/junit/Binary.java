package rlockd.junit;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import java.util.Optional;

/** Where the rlockd executable comes from. */
public final class Binary {
    /** The environment variable that names a binary to run instead of the jar's. */
    public static final String ENV = "RLOCKD_BINARY";
    /** The system property that does the same (it wins over {@link #ENV}). */
    public static final String PROPERTY = "rlockd.binary";

    /** The jar's copy, extracted once per JVM. */
    private static Path extracted;

    private Binary() {}

    /**
     * The rlockd executable: {@code explicit}, else {@code -Drlockd.binary}, else {@code
     * $RLOCKD_BINARY}, else the one this jar carries for this platform (extracted to a temp
     * file on first use).
     */
    public static Path find(Optional<Path> explicit) {
        Optional<Path> named =
                explicit.or(() -> nonEmpty(System.getProperty(PROPERTY)))
                        .or(() -> nonEmpty(System.getenv(ENV)));
        if (named.isPresent()) {
            Path path = named.get();
            if (!Files.isRegularFile(path) || !Files.isExecutable(path)) {
                throw new RlockdException("rlockd binary " + path + " is not an executable file");
            }
            return path;
        }
        return bundled();
    }

    private static Optional<Path> nonEmpty(String value) {
        return Optional.ofNullable(value).filter(v -> !v.isEmpty()).map(Path::of);
    }

    /** {@code native/OS-ARCH/rlockd} in the jar, as Java names this platform. */
    static String resourceName() {
        String os = System.getProperty("os.name").toLowerCase(Locale.ROOT).replace(' ', '-');
        String arch =
                switch (System.getProperty("os.arch")) {
                    case "amd64", "x86_64" -> "x86_64";
                    case "aarch64", "arm64" -> "aarch64";
                    default -> System.getProperty("os.arch");
                };
        return "native/" + os + "-" + arch + "/rlockd";
    }

    private static synchronized Path bundled() {
        if (extracted != null) {
            return extracted;
        }
        String resource = resourceName();
        try (InputStream in = Binary.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new RlockdException(
                        "this jar has no rlockd for this platform ("
                                + resource
                                + "): set -D"
                                + PROPERTY
                                + " or $"
                                + ENV
                                + " to a built one (cargo build --release)");
            }
            Path file = Files.createTempFile("rlockd-", "");
            file.toFile().deleteOnExit();
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            if (!file.toFile().setExecutable(true, true)) {
                throw new RlockdException("cannot make " + file + " executable");
            }
            extracted = file;
            return file;
        } catch (IOException e) {
            throw new RlockdException("cannot extract " + resource + " from the jar", e);
        }
    }
}
