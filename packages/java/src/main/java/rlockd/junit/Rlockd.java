package rlockd.junit;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Runs a test class (or method) with {@link RlockdExtension}, and says how its servers start: a
 * method's annotation wins over its class's.
 *
 * <p>A parameter of type {@link RlockdServer} in a test, {@code @BeforeEach} or {@code
 * @AfterEach} method is that test's own server, started fresh; in {@code @BeforeAll} or {@code
 * @AfterAll}, one server for the class. {@link RlockdServers} starts more.
 */
@Documented
@Inherited
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
@ExtendWith(RlockdExtension.class)
public @interface Rlockd {
    /** Serve a unix socket only (no TCP). */
    boolean unixSocket() default false;

    /** Run on the manual clock (RLOCKD.CLOCK); time moves only when the test moves it. */
    boolean manualClock() default true;

    /** {@code requirepass} ("": none). */
    String password() default "";

    /** Further flags, as on the command line. */
    String[] args() default {};

    /** The rlockd executable ("": -Drlockd.binary, $RLOCKD_BINARY, else the jar's own). */
    String binary() default "";
}
