package rlockd.junit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Marks an {@link RlockdServer} parameter as the session's server: one for the whole test run,
 * shared by every test class that asks for it, started at first use with {@link
 * RlockdOptions#defaults()} (TCP on a free port, the manual clock) and stopped when the run
 * ends. Tests that share it clean up after themselves (or {@code FLUSHALL}).
 *
 * <p>The annotation brings {@link RlockdExtension} with it: the class needs no {@link Rlockd
 * @Rlockd}, and one that has it does not shape this server.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.PARAMETER)
@ExtendWith(RlockdExtension.class)
public @interface RlockdSession {}
