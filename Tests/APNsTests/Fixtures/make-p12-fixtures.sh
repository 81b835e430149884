#!/bin/sh
# Makes the PKCS#12 fixtures of APNsCertificateTests (run once; the output is pasted into APNsCertificateFixtures.swift).
# A throwaway CA signs an RSA client certificate shaped like Apple's provider certificates (subject UID = bundle id,
# CN "Apple Push Services: <bundle id>"), valid for 100 years; the CA's key is not kept.
set -e
cd "$(mktemp -d)"
openssl req -x509 -newkey rsa:2048 -nodes -keyout ca-key.pem -out ca.pem -days 36500 \
    -subj "/O=NotificationHub/CN=NotificationHub APNs test client CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"
openssl req -newkey rsa:2048 -nodes -keyout client-key.pem -out client.csr \
    -subj "/UID=com.example.app/CN=Apple Push Services: com.example.app/OU=TEAM123456/O=Example/C=US"
printf "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n" > ext.cnf
openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 36500 -out client.pem -extfile ext.cnf
# The bundle with its key, one exported without it, and the key alone.
openssl pkcs12 -export -in client.pem -inkey client-key.pem -name "Apple Push Services: com.example.app" \
    -passout pass:fixture-password -out client.p12
openssl pkcs12 -export -in client.pem -nokeys -passout pass:fixture-password -out client-nokey.p12
openssl pkcs12 -export -nocerts -inkey client-key.pem -passout pass:fixture-password -out client-nocert.p12
echo "authorityPEM:"; cat ca.pem
echo "pkcs12 (base64):"; base64 -w 0 client.p12; echo
echo "pkcs12WithoutKey (base64):"; base64 -w 0 client-nokey.p12; echo
echo "pkcs12WithoutCertificate (base64):"; base64 -w 0 client-nocert.p12; echo
