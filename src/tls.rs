//! TLS as Redis 7.0 configures it, on rustls (no OpenSSL to build or
//! link): the `tls-*` directives made into the acceptor the TLS listener
//! hands each new connection. CONFIG SET of any of them builds a new one
//! from the files as they are now (so renewed certificates are taken up
//! without a restart), and refuses the change whole when it does not load;
//! connections already open keep the session they made.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use parking_lot::RwLock;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::crypto::ring::{cipher_suite, default_provider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{NoServerSessionStorage, ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls::{RootCertStore, ServerConfig, SupportedCipherSuite, SupportedProtocolVersion};
use tokio_rustls::TlsAcceptor;

use crate::config::Config;

/// The acceptor in force, swapped whole by a reload.
#[derive(Default)]
pub(crate) struct Tls {
    acceptor: RwLock<Option<TlsAcceptor>>,
}

impl Tls {
    /// Builds the acceptor from `config` when TLS is on (a TLS port, or
    /// replication or the cluster bus over TLS, as Redis decides), keeping
    /// the one in force when that fails.
    pub fn configure(&self, config: &Config) -> Result<(), TlsError> {
        if config.tls_port.is_none() && !config.tls_replication && !config.tls_cluster {
            return Ok(());
        }
        let acceptor = TlsAcceptor::from(Arc::new(server_config(config)?));
        *self.acceptor.write() = Some(acceptor);
        Ok(())
    }

    /// What a connection to the TLS port shakes hands with.
    pub fn acceptor(&self) -> Option<TlsAcceptor> {
        self.acceptor.read().clone()
    }
}

/// Why the TLS settings did not load: Redis's log lines, with rustls's
/// reason where Redis gives OpenSSL's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsError {
    NoCertFile,
    NoKeyFile,
    NoCa,
    BadProtocols,
    /// A version rustls does not speak (TLSv1, TLSv1.1).
    OldProtocol(String),
    Cert {
        file: String,
        why: String,
    },
    Key {
        file: String,
        why: String,
    },
    Ca(String),
    /// The list as given, and the name in it rustls does not offer.
    Ciphers {
        list: String,
        unknown: String,
    },
    Ciphersuites {
        list: String,
        unknown: String,
    },
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TlsError::NoCertFile => f.write_str("No tls-cert-file configured!"),
            TlsError::NoKeyFile => f.write_str("No tls-key-file configured!"),
            TlsError::NoCa => f.write_str(
                "Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!",
            ),
            TlsError::BadProtocols => f.write_str(
                "Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.",
            ),
            TlsError::OldProtocol(name) => write!(
                f,
                "{name} is specified in tls-protocols but not supported by rustls (TLSv1.2 and TLSv1.3 only)."
            ),
            TlsError::Cert { file, why } => write!(f, "Failed to load certificate: {file}: {why}"),
            TlsError::Key { file, why } => write!(f, "Failed to load private key: {file}: {why}"),
            TlsError::Ca(why) => write!(
                f,
                "Failed to configure CA certificate(s) file/directory: {why}"
            ),
            TlsError::Ciphers { list, unknown } => write!(
                f,
                "Failed to configure ciphers: {list}: rustls offers no '{unknown}' (it offers {})",
                offered(TLS12_CIPHERS)
            ),
            TlsError::Ciphersuites { list, unknown } => write!(
                f,
                "Failed to configure ciphersuites: {list}: rustls offers no '{unknown}' (it offers {})",
                offered(TLS13_CIPHERSUITES)
            ),
        }
    }
}

impl std::error::Error for TlsError {}

/// The TLS 1.2 ciphers rustls offers, by OpenSSL's names (`tls-ciphers`).
const TLS12_CIPHERS: &[(&str, SupportedCipherSuite)] = &[
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        cipher_suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        cipher_suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        cipher_suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        cipher_suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    ),
];

/// The TLS 1.3 suites rustls offers, by their IANA names
/// (`tls-ciphersuites`, as OpenSSL names them too).
const TLS13_CIPHERSUITES: &[(&str, SupportedCipherSuite)] = &[
    (
        "TLS_AES_256_GCM_SHA384",
        cipher_suite::TLS13_AES_256_GCM_SHA384,
    ),
    (
        "TLS_AES_128_GCM_SHA256",
        cipher_suite::TLS13_AES_128_GCM_SHA256,
    ),
    (
        "TLS_CHACHA20_POLY1305_SHA256",
        cipher_suite::TLS13_CHACHA20_POLY1305_SHA256,
    ),
];

fn offered(table: &[(&str, SupportedCipherSuite)]) -> String {
    table
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(":")
}

/// The suites a `:`-separated list names, in its order (which is the
/// server's preference); all of the table's for an empty list. `Err` holds
/// the first name the table lacks.
fn pick_suites(
    list: &str,
    table: &[(&str, SupportedCipherSuite)],
) -> Result<Vec<SupportedCipherSuite>, String> {
    if list.is_empty() {
        return Ok(table.iter().map(|(_, suite)| *suite).collect());
    }
    list.split(':')
        .map(|name| {
            table
                .iter()
                .find(|(known, _)| known.eq_ignore_ascii_case(name))
                .map(|(_, suite)| *suite)
                .ok_or_else(|| name.to_string())
        })
        .collect()
}

/// `tls-protocols`, words split on single spaces as Redis splits them
/// (""): TLSv1.2 and TLSv1.3, Redis's default).
fn protocols(value: &str) -> Result<Vec<&'static SupportedProtocolVersion>, TlsError> {
    if value.is_empty() {
        return Ok(vec![&rustls::version::TLS13, &rustls::version::TLS12]);
    }
    let mut versions = Vec::new();
    for word in value.split(' ') {
        let version = match word.to_ascii_lowercase().as_str() {
            "tlsv1.3" => &rustls::version::TLS13,
            "tlsv1.2" => &rustls::version::TLS12,
            "tlsv1" | "tlsv1.1" => return Err(TlsError::OldProtocol(word.to_string())),
            _ => return Err(TlsError::BadProtocols),
        };
        if !versions.contains(&version) {
            versions.push(version);
        }
    }
    Ok(versions)
}

/// The cipher suites `tls-ciphers` and `tls-ciphersuites` leave, TLS 1.3's
/// first.
fn cipher_suites(config: &Config) -> Result<Vec<SupportedCipherSuite>, TlsError> {
    let tls13 = pick_suites(&config.tls_ciphersuites, TLS13_CIPHERSUITES).map_err(|unknown| {
        TlsError::Ciphersuites {
            list: config.tls_ciphersuites.clone(),
            unknown,
        }
    })?;
    let tls12 =
        pick_suites(&config.tls_ciphers, TLS12_CIPHERS).map_err(|unknown| TlsError::Ciphers {
            list: config.tls_ciphers.clone(),
            unknown,
        })?;
    Ok(tls13.into_iter().chain(tls12).collect())
}

/// rustls's provider with only the suites the config names; the suite
/// the server has no key for (ECDSA with an RSA key) is skipped at each
/// handshake.
fn provider(config: &Config) -> Result<Arc<CryptoProvider>, TlsError> {
    Ok(Arc::new(CryptoProvider {
        cipher_suites: cipher_suites(config)?,
        ..default_provider()
    }))
}

fn certificates(file: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(file)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| e.to_string())?;
    if certs.is_empty() {
        return Err("no certificate found in the file".into());
    }
    Ok(certs)
}

/// The key in `file`, decrypted with `pass` when it is encrypted.
fn private_key(file: &str, pass: &str) -> Result<PrivateKeyDer<'static>, TlsError> {
    let failed = |why: String| TlsError::Key {
        file: file.to_string(),
        why,
    };
    let pem = std::fs::read_to_string(file).map_err(|e| failed(e.to_string()))?;
    if pem.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        return decrypt_key(&pem, pass).map_err(failed);
    }
    PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|e| failed(e.to_string()))
}

/// A PKCS#8 key under `tls-key-file-pass` (`openssl genpkey -aes256`),
/// which rustls leaves to its caller.
fn decrypt_key(pem: &str, pass: &str) -> Result<PrivateKeyDer<'static>, String> {
    let (_, doc) = pkcs8::der::Document::from_pem(pem).map_err(|e| e.to_string())?;
    let info =
        pkcs8::EncryptedPrivateKeyInfoRef::try_from(doc.as_bytes()).map_err(|e| e.to_string())?;
    let key = info
        .decrypt(pass)
        .map_err(|_| "bad decrypt (is tls-key-file-pass right?)".to_string())?;
    Ok(PrivateKeyDer::Pkcs8(key.as_bytes().to_vec().into()))
}

/// Every certificate of `tls-ca-cert-file` and of the files in
/// `tls-ca-cert-dir` (files there that hold none are passed over, as
/// OpenSSL looks only for the ones it needs).
fn roots(config: &Config) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    let mut add = |certs: Vec<CertificateDer<'static>>| {
        for cert in certs {
            roots.add(cert).map_err(|e| TlsError::Ca(e.to_string()))?;
        }
        Ok(())
    };
    if !config.tls_ca_cert_file.is_empty() {
        let file = &config.tls_ca_cert_file;
        add(certificates(file).map_err(|why| TlsError::Ca(format!("{file}: {why}")))?)?;
    }
    if !config.tls_ca_cert_dir.is_empty() {
        let dir = Path::new(&config.tls_ca_cert_dir);
        let entries =
            std::fs::read_dir(dir).map_err(|e| TlsError::Ca(format!("{}: {e}", dir.display())))?;
        for entry in entries.flatten() {
            if let Ok(certs) = certificates(&entry.path().to_string_lossy()) {
                add(certs)?;
            }
        }
    }
    Ok(roots)
}

/// The whole server side, checked in Redis's order.
fn server_config(config: &Config) -> Result<ServerConfig, TlsError> {
    if config.tls_cert_file.is_empty() {
        return Err(TlsError::NoCertFile);
    }
    if config.tls_key_file.is_empty() {
        return Err(TlsError::NoKeyFile);
    }
    let auth = config.tls_auth_clients.as_str();
    if (auth != "no" || config.tls_cluster || config.tls_replication)
        && config.tls_ca_cert_file.is_empty()
        && config.tls_ca_cert_dir.is_empty()
    {
        return Err(TlsError::NoCa);
    }
    let versions = protocols(&config.tls_protocols)?;
    let provider = provider(config)?;
    let certs = certificates(&config.tls_cert_file).map_err(|why| TlsError::Cert {
        file: config.tls_cert_file.clone(),
        why,
    })?;
    let key = private_key(&config.tls_key_file, &config.tls_key_file_pass)?;
    let verifier = match auth {
        "no" => WebPkiClientVerifier::no_client_auth(),
        _ => {
            let builder = WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots(config)?),
                provider.clone(),
            );
            let builder = match auth {
                "optional" => builder.allow_unauthenticated(),
                _ => builder,
            };
            builder.build().map_err(|e| TlsError::Ca(e.to_string()))?
        }
    };
    let mut server = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| TlsError::Ciphers {
            list: format!("{} {}", config.tls_ciphers, config.tls_ciphersuites),
            unknown: e.to_string(),
        })?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .map_err(|e| TlsError::Key {
            file: config.tls_key_file.clone(),
            why: e.to_string(),
        })?;
    server.ignore_client_order = config.tls_prefer_server_ciphers;
    server.session_storage = match config.tls_session_caching {
        // rustls's cache needs a bound: OpenSSL's 0 (no limit) keeps
        // Redis's default size.
        true => ServerSessionMemoryCache::new(match config.tls_session_cache_size {
            0 => 20 * 1024,
            size => size as usize,
        }),
        false => Arc::new(NoServerSessionStorage {}),
    };
    Ok(server)
}

/// The client side of `--health-check` on a TLS port: it trusts exactly
/// the certificate of `tls-cert-file` (the server it checks shares its
/// files, whatever names the certificate holds), and when the server asks
/// for one presents `tls-client-cert-file`, or as Redis does without one,
/// the server's own certificate.
pub fn health_check_session(config: &Config) -> Result<rustls::ClientConnection, TlsError> {
    let cert_failed = |file: &str| {
        let file = file.to_string();
        move |why| TlsError::Cert { file, why }
    };
    let own = certificates(&config.tls_cert_file).map_err(cert_failed(&config.tls_cert_file))?;
    let provider = Arc::new(default_provider());
    let verifier = Arc::new(ItsOwnCertificate {
        expected: own[0].clone(),
        provider: provider.clone(),
    });
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Ca(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let client = match config.tls_auth_clients.as_str() {
        "no" => builder.with_no_client_auth(),
        _ => {
            let (cert, key, pass) = match config.tls_client_cert_file.as_str() {
                "" => (own, &config.tls_key_file, &config.tls_key_file_pass),
                file => (
                    certificates(file).map_err(cert_failed(file))?,
                    &config.tls_client_key_file,
                    &config.tls_client_key_file_pass,
                ),
            };
            builder
                .with_client_auth_cert(cert, private_key(key, pass)?)
                .map_err(|e| TlsError::Key {
                    file: key.clone(),
                    why: e.to_string(),
                })?
        }
    };
    // The name is not what is checked: the certificate itself is.
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("a valid name");
    rustls::ClientConnection::new(Arc::new(client), name).map_err(|e| TlsError::Ca(e.to_string()))
}

/// Accepts the one certificate it was given, and checks that the server
/// holds its key, as any verifier does.
#[derive(Debug)]
struct ItsOwnCertificate {
    expected: CertificateDer<'static>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for ItsOwnCertificate {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _name: &rustls::pki_types::ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.expected.as_ref() {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        signature: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            signature,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        signature: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            signature,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::CipherSuite;

    #[test]
    fn protocols_as_redis_reads_them() {
        assert_eq!(protocols("").unwrap().len(), 2);
        assert_eq!(protocols("TLSv1.2").unwrap(), [&rustls::version::TLS12]);
        assert_eq!(protocols("tlsv1.3 TLSv1.2").unwrap().len(), 2);
        assert_eq!(
            protocols("TLSv1.2 TLSv1.1"),
            Err(TlsError::OldProtocol("TLSv1.1".into()))
        );
        assert_eq!(protocols("TLSv1.2  TLSv1.3"), Err(TlsError::BadProtocols));
        assert_eq!(protocols("SSLv3"), Err(TlsError::BadProtocols));
    }

    #[test]
    fn cipher_names_map_to_rustls_suites() {
        let got = pick_suites("ECDHE-RSA-AES128-GCM-SHA256", TLS12_CIPHERS).unwrap();
        assert_eq!(
            got[0].suite(),
            CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
        );
        let got = pick_suites(
            "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256",
            TLS13_CIPHERSUITES,
        )
        .unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(
            pick_suites("ECDHE-RSA-AES128-GCM-SHA256:DES-CBC3-SHA", TLS12_CIPHERS),
            Err("DES-CBC3-SHA".into())
        );
        assert_eq!(pick_suites("", TLS12_CIPHERS).unwrap().len(), 6);
        let config = Config {
            tls_ciphers: "HIGH:!aNULL".into(),
            ..Config::default()
        };
        let err = cipher_suites(&config).unwrap_err().to_string();
        assert!(
            err.starts_with("Failed to configure ciphers: HIGH:!aNULL: rustls offers no 'HIGH' (it offers ECDHE-ECDSA-AES256-GCM-SHA384:"),
            "{err}"
        );
    }

    #[test]
    fn missing_files_are_named_in_redis_order() {
        let tls = Tls::default();
        let mut config = Config {
            tls_port: Some(6380),
            ..Config::default()
        };
        assert_eq!(tls.configure(&config), Err(TlsError::NoCertFile));
        config.tls_cert_file = "/nonexistent/cert.pem".into();
        assert_eq!(tls.configure(&config), Err(TlsError::NoKeyFile));
        config.tls_key_file = "/nonexistent/key.pem".into();
        assert_eq!(tls.configure(&config), Err(TlsError::NoCa));
        config.tls_auth_clients = "no".into();
        let err = tls.configure(&config).unwrap_err().to_string();
        assert!(
            err.starts_with("Failed to load certificate: /nonexistent/cert.pem: "),
            "{err}"
        );
        assert!(tls.acceptor().is_none());
        // Off, nothing is read.
        config.tls_port = None;
        assert_eq!(tls.configure(&config), Ok(()));
    }
}
