import CallLog
import NIOSSL

/// The server's certificate and key (`--tls-cert`, `--tls-key`, PEM), read into a TLS context
/// that every new connection takes. `reload()` (SIGHUP) reads both files again so that a renewed
/// certificate is served without a restart: connections open keep the context they started with,
/// new ones get the new one. Files that cannot be read, or a key that does not match the
/// certificate, leave the previous context in place: a half-finished rotation never stops the
/// server from answering.
final class TLSCertificate: Sendable {
    let certificatePath: String
    let keyPath: String
    private let current: Locked<NIOSSLContext>

    struct LoadError: Error, CustomStringConvertible {
        var description: String
    }

    init(certificatePath: String, keyPath: String) throws {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
        current = Locked(try Self.load(certificatePath: certificatePath, keyPath: keyPath))
    }

    /// The context for a connection being accepted now.
    var context: NIOSSLContext { current.withLock { $0 } }

    /// Reads the files again; returns what went wrong (the previous certificate stays), or nil.
    func reload() -> String? {
        do {
            let fresh = try Self.load(certificatePath: certificatePath, keyPath: keyPath)
            current.withLock { $0 = fresh }
            return nil
        } catch {
            return "\(error)"
        }
    }

    private static func load(certificatePath: String, keyPath: String) throws -> NIOSSLContext {
        let chain: [NIOSSLCertificate]
        do { chain = try NIOSSLCertificate.fromPEMFile(certificatePath) } catch {
            throw LoadError(description: "cannot read the certificate \(certificatePath) (PEM): \(error)")
        }
        guard !chain.isEmpty else { throw LoadError(description: "no certificate in \(certificatePath) (PEM)") }
        let key: NIOSSLPrivateKey
        do { key = try NIOSSLPrivateKey(file: keyPath, format: .pem) } catch {
            throw LoadError(description: "cannot read the private key \(keyPath) (PEM): \(error)")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.applicationProtocols = ["http/1.1"]
        do { return try NIOSSLContext(configuration: configuration) } catch {
            throw LoadError(
                description: "the certificate \(certificatePath) and the key \(keyPath) cannot be used together: \(error)")
        }
    }
}
