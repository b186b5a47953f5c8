//! A throw-away PKI made at run time for the TLS tests (none is
//! committed): a CA, the server's certificate, a client certificate from
//! the same CA, and a CA and client certificate nobody trusts.

use std::path::Path;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

use super::TempDir;

/// A certificate authority made for one test.
pub struct Ca {
    params: CertificateParams,
    key: KeyPair,
    pub pem: String,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().unwrap();
        let pem = params.self_signed(&key).unwrap().pem();
        Ca { params, key, pem }
    }

    /// A certificate and its key (PEM) for `names`, signed by this CA, for
    /// a server or a client.
    pub fn issue(&self, names: &[&str], purposes: &[ExtendedKeyUsagePurpose]) -> (String, String) {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "rlockd test");
        params.extended_key_usages = purposes.to_vec();
        let key = KeyPair::generate().unwrap();
        let issuer = Issuer::from_params(&self.params, &self.key);
        let cert = params.signed_by(&key, &issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

/// The files of one test: a CA, the server's certificate for localhost
/// and 127.0.0.1, a client certificate from the same CA, and a client
/// certificate from a CA nobody trusts.
pub struct Pki {
    dir: TempDir,
}

impl Pki {
    pub fn new() -> Pki {
        let dir = TempDir::new("tls");
        let write = |name: &str, text: &str| std::fs::write(dir.path(name), text).unwrap();
        let ca = Ca::new("rlockd test CA");
        let rogue = Ca::new("rogue CA");
        write("ca.pem", &ca.pem);
        write("rogue-ca.pem", &rogue.pem);
        // A client too, as Redis's own certificate is when it connects
        // (and the health check's).
        let server = ca.issue(
            &["localhost", "127.0.0.1"],
            &[
                ExtendedKeyUsagePurpose::ServerAuth,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
        );
        write("server.pem", &server.0);
        write("server.key", &server.1);
        let client = ca.issue(&["client"], &[ExtendedKeyUsagePurpose::ClientAuth]);
        write("client.pem", &client.0);
        write("client.key", &client.1);
        let stranger = rogue.issue(&["client"], &[ExtendedKeyUsagePurpose::ClientAuth]);
        write("rogue.pem", &stranger.0);
        write("rogue.key", &stranger.1);
        Pki { dir }
    }

    /// The directory the files are in, by these names: `ca.pem`,
    /// `server.pem`/`server.key`, `client.pem`/`client.key`,
    /// `rogue-ca.pem`, `rogue.pem`/`rogue.key`.
    pub fn dir(&self) -> &Path {
        self.dir.root()
    }

    pub fn path(&self, name: &str) -> String {
        self.dir.path(name).to_str().unwrap().to_string()
    }

    /// The server side of the config: its certificate, and the CA its
    /// clients' certificates must chain to.
    pub fn config(&self) -> rlockd::Config {
        rlockd::Config {
            tls_cert_file: self.path("server.pem"),
            tls_key_file: self.path("server.key"),
            tls_ca_cert_file: self.path("ca.pem"),
            ..rlockd::Config::default()
        }
    }

    /// The same as flags, for either server binary.
    pub fn flags(&self, tls_port: u16) -> Vec<String> {
        let mut flags: Vec<String> = ["--port", "0", "--tls-port"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        flags.push(tls_port.to_string());
        for (name, file) in [
            ("--tls-cert-file", "server.pem"),
            ("--tls-key-file", "server.key"),
            ("--tls-ca-cert-file", "ca.pem"),
        ] {
            flags.push(name.into());
            flags.push(self.path(file));
        }
        flags
    }
}
