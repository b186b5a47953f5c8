package rlockd.junit;

import java.util.Optional;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.junit.platform.commons.support.AnnotationSupport;

/**
 * Injects {@link RlockdServer} and {@link RlockdServers} parameters. A test method's (and its
 * {@code @BeforeEach}/{@code @AfterEach}'s) server is its own, started at first use and
 * stopped after the test; a {@code @BeforeAll}/{@code @AfterAll} parameter gets the class's.
 * Options come from the nearest {@link Rlockd @Rlockd}: the method's, its class's, an
 * enclosing class's. A parameter marked {@link RlockdSession @RlockdSession} is the run's one
 * server instead, kept in the root context's store, which closes it when the run ends.
 */
public final class RlockdExtension implements ParameterResolver {
    private static final ExtensionContext.Namespace NAMESPACE =
            ExtensionContext.Namespace.create(RlockdExtension.class);

    @Override
    public boolean supportsParameter(ParameterContext parameter, ExtensionContext context) {
        Class<?> type = parameter.getParameter().getType();
        return type == RlockdServer.class || type == RlockdServers.class;
    }

    @Override
    public Object resolveParameter(ParameterContext parameter, ExtensionContext context) {
        if (parameter.isAnnotated(RlockdSession.class)) {
            return session(parameter, context);
        }
        // Stores look up their parents' values: keyed by the context, a test does not
        // get its class's server.
        ExtensionContext.Store store = context.getStore(NAMESPACE.append(context.getUniqueId()));
        // The store closes what it holds (both are AutoCloseable) when its context ends,
        // the servers after the first one as well.
        RlockdServers servers =
                store.getOrComputeIfAbsent(
                        RlockdServers.class, k -> new RlockdServers(options(context)), RlockdServers.class);
        if (parameter.getParameter().getType() == RlockdServers.class) {
            return servers;
        }
        return store.getOrComputeIfAbsent(RlockdServer.class, k -> servers.start(), RlockdServer.class);
    }

    /** The run's server, started by whichever test asks first. */
    private static RlockdServer session(ParameterContext parameter, ExtensionContext context) {
        if (parameter.getParameter().getType() != RlockdServer.class) {
            throw new ParameterResolutionException(
                    "@RlockdSession marks an RlockdServer parameter, not " + parameter.getParameter());
        }
        return context.getRoot()
                .getStore(NAMESPACE)
                .getOrComputeIfAbsent(
                        RlockdSession.class, k -> RlockdServer.start(RlockdOptions.defaults()), RlockdServer.class);
    }

    /** The nearest {@code @Rlockd}'s options, else the defaults. */
    static RlockdOptions options(ExtensionContext context) {
        for (Optional<ExtensionContext> c = Optional.of(context); c.isPresent(); c = c.get().getParent()) {
            Optional<Rlockd> found =
                    c.get().getElement().flatMap(e -> AnnotationSupport.findAnnotation(e, Rlockd.class));
            if (found.isPresent()) {
                return RlockdOptions.of(found.get());
            }
        }
        return RlockdOptions.defaults();
    }
}
