package rlockd.junit;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
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

    /**
     * The platforms a jar may carry a binary for, as its {@code native/} folders name them
     * ({@code .ci/run} builds both).
     */
    static final List<String> PLATFORMS = List.of("linux-x86_64", "linux-aarch64");

    /** This JVM's platform, as {@code native/} names it. */
    static String platform() {
        return platform(System.getProperty("os.name"), System.getProperty("os.arch"));
    }

    /** {@code os.name} and {@code os.arch} as {@code native/} names them: Java says amd64. */
    static String platform(String osName, String osArch) {
        String os = osName.toLowerCase(Locale.ROOT).replace(' ', '-');
        String arch =
                switch (osArch) {
                    case "amd64", "x86_64" -> "x86_64";
                    case "aarch64", "arm64" -> "aarch64";
                    default -> osArch;
                };
        return os + "-" + arch;
    }

    private static String resource(String platform) {
        return "native/" + platform + "/rlockd";
    }

    private static synchronized Path bundled() {
        if (extracted == null) {
            extracted = extract(platform());
        }
        return extracted;
    }

    /** The jar's binary for {@code platform}, copied to a new executable temp file. */
    static Path extract(String platform) {
        String resource = resource(platform);
        try (InputStream in = Binary.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new RlockdException(
                        "this jar has no rlockd for "
                                + platform
                                + " (it carries: "
                                + String.join(", ", carried())
                                + "): set -D"
                                + PROPERTY
                                + " or $"
                                + ENV
                                + " to one built for it (cargo build --release)");
            }
            Path file = Files.createTempFile("rlockd-", "");
            file.toFile().deleteOnExit();
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            if (!file.toFile().setExecutable(true, true)) {
                throw new RlockdException("cannot make " + file + " executable");
            }
            return file;
        } catch (IOException e) {
            throw new RlockdException("cannot extract " + resource + " from the jar", e);
        }
    }

    /** The platforms of {@link #PLATFORMS} this jar has a binary for. */
    static List<String> carried() {
        return PLATFORMS.stream()
                .filter(p -> Binary.class.getClassLoader().getResource(resource(p)) != null)
                .toList();
    }
}
