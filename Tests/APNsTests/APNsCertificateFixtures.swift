import Foundation

/// PKCS#12 fixtures made once by `Fixtures/make-p12-fixtures.sh` (`openssl pkcs12 -export`): a throwaway CA, a
/// client certificate for `com.example.app` with its RSA key (password `fixture-password`), and the same bundle
/// exported without its key, and the key alone. Test material only; the CA's key was discarded.
enum APNsCertificateFixtures {
    /// The password of both bundles.
    static let password = "fixture-password"
    /// The CA that issued the bundle's certificate.
    static let authorityPEM = """
        -----BEGIN CERTIFICATE-----
        MIIDgzCCAmugAwIBAgIUDjOvbOLmAmMTGqUVgaGpXxMNcfAwDQYJKoZIhvcNAQEL
        BQAwSDEYMBYGA1UECgwPTm90aWZpY2F0aW9uSHViMSwwKgYDVQQDDCNOb3RpZmlj
        YXRpb25IdWIgQVBOcyB0ZXN0IGNsaWVudCBDQTAgFw0yNjExMjgxMTQwMTlaGA8y
        MTI2MTEwNDExNDAxOVowSDEYMBYGA1UECgwPTm90aWZpY2F0aW9uSHViMSwwKgYD
        VQQDDCNOb3RpZmljYXRpb25IdWIgQVBOcyB0ZXN0IGNsaWVudCBDQTCCASIwDQYJ
        KoZIhvcNAQEBBQADggEPADCCAQoCggEBALFjKBZ6bP+ccuGDe7fzQkQjWExgck0M
        a591R2fd+83yHVwwbpv6BfvfCyqEcfohEKV2q9Et74HwTzHHWxvi12SnexHx47Li
        iXFbDyNeg2T/BsfzFrSp2S3QccpDtc+fZISEzvsQsjGmyX+Sfe3KHrJ1Gapuqxtw
        +Dvl0WZtDP6y4+zVFmV8IX1n0IyY1HclwEVrT3r3ZhGFNId+lUaNTPGExAA/h1wu
        uNFL76srjxGJMxcADY1jJFApJwFJA1Mjt43pxAgbPSjPwP6smULkVOGDnxqLS7N0
        7AyP0PjBY1geY+XlUrr+Y+adzqMFCBFnN9KPa3vBMdyZXDcdC4W2+MMCAwEAAaNj
        MGEwHQYDVR0OBBYEFFxyAyUMs634CE0VtAEJy3aBEt25MB8GA1UdIwQYMBaAFFxy
        AyUMs634CE0VtAEJy3aBEt25MA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQD
        AgEGMA0GCSqGSIb3DQEBCwUAA4IBAQAX/cdbC4/dD3dvaR4axn6I3eg+wc9KwmQ0
        BPWBdl6dPJrqK98vGiGJnzHNDI6Sw/y6/OecwjBnG9INl+7BPBDPhHdbAcuJZcra
        XzAdfx3Wsb14eG8kxiIJgckMtnCSQSfdRUymOpXwjZ0zPeHMNxyXOaVmDpwfkw7m
        FtfrXdKGHcDc5+Eb7yPmU+EEZg7kY42uzGjEWTSkMCIfrTBTxquHiM8a8slgewGN
        Un3JoIitPLehWH6eym7hcZZyxpEQTtOU+zKh3uxqSXL5zKARXfujx6EY+Z+q9du/
        sRXSnbOQ4OwuRPhVRuxr3ekuKVQD5vYWcvkDfjOvnAx5R/NOn/pq
        -----END CERTIFICATE-----
        """
    /// `client.p12`: the certificate (UID com.example.app) and its key.
    static let pkcs12 = [UInt8](
        Data(
            base64Encoded: """
                MIILWAIBAzCCCw4GCSqGSIb3DQEHAaCCCv8Eggr7MIIK9zCCBRIGCSqGSIb3DQEHBqCCBQMwggT/AgEAMIIE+AYJKoZIhvcNAQcB
                MFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAgOLFaZ8KChZwICCAAwDAYIKoZIhvcNAgkFADAdBglghkgBZQMEASoEEFPD
                2fjMDERQevoqdh6ifn2AggSQ0cUbSUxahnkHCu486BjRcGrGAyk5Hp9q7pgvMZGonI4FjckTrLZ8fkluhdhkSz+q4U/tI/Vrcq0w
                x/N4tNjhPkcc6+CJMeswjn7BFqPNLR5hduv2xkwFE7I34HQvdRU9gnCK68hVYu/jq+NW22Vg6+zV0t0EI3mUmzOKxkhl+RkutH2b
                q83yt2kmI/ku6BCcWVJydria+gByioW5Ci9k07Mhu04dhut+2Yj9QAHODB1SwYoxInT/+cNBMJt+MHmtyu47pRw8MT4MAWXOydnS
                /i4+kPZKYWJO+7bNaJbhdbeBS6+oG7MOOhP9hV++8s9lpnqCEryKkQRbWqCpbBfDw13IWaCQrFyeIHzk8U8AwIRy5RkT8Ga9Be/T
                4bdVHqcNynd8TS0IoSJOsmsp0K7iyvyxuNDu8tYyVHMGVi27pVdcXjFLErgKIreRZd0nTnOIonweYtX5jIDouqFmK1F6XaBI2y59
                G0gPHjqECOMwws+dCzS2iCXu+Ad2BN5CuXtKxPYX+tdlBzDl7F1NK/cVggVykcm71lAE90u+wtjSgob0DVU/UktAJOpalDq0dNiJ
                /ts2zW9JTprKLEE/9iZj0qauouQikw9RhUqLQSWqs2Kz7pO9MFTsarKwxDraIMnOHrWYyS9ruCn6GXzVqhXbLOrv9wDRK7yfX7Q5
                vJWRjmjza0jLY9mBhj7aTvXAm2Qu+JezeA3UbaXDyC4KQVi+0blF0uiigFHqFP+DMWHmrDHLrBhUdq4bya2LRaswn2frY+4cJzTW
                FHiPXYcRjbV+5x31QgvUCWwYX73udHpJvzOMwnxNCc8YeXNhVom4xpUf5ozTJnQ/nw4STTY6Sv4rRceJbE+jq5wDGUbXAIEYW+m4
                mrKbEHeW3Lgxt2L+5N/WixOWtj4fEkOP3gIZIkVV8zg7CyhVV8yBojS8/N5HwGwLtpTNmsEeTceTGWNRuvoh+oB/LhR4qX6zqSns
                U4HKeLCWW2S1Ea4NwkDPuIgRs7hjOukbrGAhffnEipMUvGhcpww+yp+mI0yxQktACfw3U7fC6M22ZrZmABNOs/dGutvu/C94L5uw
                HCGRPFqLr+cpZ1HETvBFRw83mJCCLriXD9bP/j0rGHYrTRsphM+yqn7rlSve75qS6d4Dzd4aQMMUrOS8Zv10kbm5WqofdCPgj6LG
                j7dVeXauSUAko3MG0hX4Al+fJ6fWVbgASAWz16NbeLzsJvTJ06q9yPwcdQSYeweeQUVwZI0+L/fb92plDzdaFkArjfZZBfz9O+IU
                13SbEK/MT2gYh/Ph4IeqsdM87ysjeTrBRcL85BAwy98SQmFu7m6Ivx+0ulFn1yHpMna6lOTIfVgjA9VxIppn+0y4rJgz4UlnmhQ3
                pe/RKruhQx3CBIf3MDam9Hwp64ylJPj1W933DhELjAmDAkPVUkg+3yZA/zl+qh6w2N5nNyQpuxmXNFsvzgzQOAlHmoWesHiGjPTi
                yDBDoPneV2BXl6Lbc1GgMUGdYpRJ8Ldpk1+LG1TRl6d+jFE0nxA8GRu4FGEOvVhM4FrNAbZDgN6vqZD4VjCCBd0GCSqGSIb3DQEH
                AaCCBc4EggXKMIIFxjCCBcIGCyqGSIb3DQEMCgECoIIFMTCCBS0wVwYJKoZIhvcNAQUNMEowKQYJKoZIhvcNAQUMMBwECFDY9ObA
                nkJkAgIIADAMBggqhkiG9w0CCQUAMB0GCWCGSAFlAwQBKgQQqcCXCltSDH9ZCebJsSWL7QSCBNBBzSu/MAPtV6jBPSloLgb9XaVf
                n5FfqWExq1SpyeWq5v+yQl1EZgXjG+PTN1MFJ16vRV49cItFQfuIwleMvLnnuLxR3PINsu6+CFC5pp6OU25VTY3hhIHxJfYMX5ms
                K5seiELo0jqoo21tOglBweKoDvc24bsopTW/5AzM2EzsJuBc85JFKEmOMd1kzHn0XPNoncJsbN2O1Kurqs9to3hWW8dyQ21kPqd7
                rzMIC/MMGcHhC1k+6mFBIiP9BNWLxJYSxRBfPQWUn8v/n/TfUVlarFd7ySOQ9vjiUuacPxqn6rhmYzg7AtJJFBKDRwlbB4GUFYH3
                hzCJMfmTVRolHR5m5C27CZto/HN4vZurf3iu57jKGSBOJQsxZr8al4ngECoamwB2pqgs5Onn6ySns5Af4kiSsexTmAHFPkktYTa6
                ycDf6uCLQSk0WNLV9CnkyxGfYrRghbcoG2+ql7ah9GbnJFYsq+fC84u0lJF8t4eukqLMr6yQRDC10X4OHQ9NpJAes/0iBPCyFRmM
                RnShT2JDdkEj0CPmrdgSXdRVqcfuYIC88xhDT6GZKXV2Wdi2uTbHPcCMtChmOk2bt2en2M982/k9d20Valy2aG/X62TYOYrMC4cJ
                6JcPAlHcC5uhl1Et1Xm+imsz67rqx6pvOA/hk0t1MtMVxMrNqgnzJEh8fyng/oyT1q67m54Vn1KL8WDU4p/rVT5TvKHS8zPd4ejn
                X5X/BS1VEfwBfprDSas3i4na25RYxGhIDab2X34PfSZfQHHrz0Yo4T1HJufsCNbj/3abDaQXWy+kR+aU4x9ZIInP8NPio55989Ip
                nSvf/jOmNVY2EgtWceFzbLh19fk61vDEU4UQ43tUnjoSHOsne+4TfNX88i054ND/P+wJCapLqOljLmBtVHCwlowj/6uDV+rs5ONe
                zUDuyKwYqIbjLWRwtkY2VWkTG1O5a+O+uHUdbI4zD52pxWHXLb+OCvVRUF6I4P5kgR9gcOeIoxk795ShHlMMiJo9VBdxyuSJoKCQ
                osZwMM4hYbE8WAGWKltiINcXCT0ilgqJKgpD/g2ElM+t6UuICnGU8wTr96ZagpQSpFsOzmnfgihkzuKcQ7qgnmrGd7qBnjjhvFMR
                1iles4r++yYBd/eJ6AmFHgMjxt3YMuqs8L7IvfA20zeVPMyicjzY9tJmFMN1XVVY3dtHjBAMvRJJt+H/fCqojmiJo56LiTSvdZTo
                tshRZ7p2Rn8Sab+pos8Xf2/NzvAZxOyZ0VGWpBVQrXFwpMwxwSwFfOm/ANZS6Sy2qJq59Zx3BJeclEaIsICTvkkQ8iOcUXGT6mzJ
                eIdP56p4xJEylepEgfg7koZ7QfSDiy4ceCHM3EQa+OYf/4iEym4otsIRLsdHTtGPvmCqFC++OK9jyF3/aeqzKF6rLgUp9zOibYEs
                xCE/DT51dt43MUKo1aJXrVmHCWUNfXCE1Rt6q5yuLRzgP2z7d37JjRdpHFAwJ8xjlfrDySdbFqzgx4pe/Wr889wyupP/55+179In
                vomQ5Ckb2QCFzlhFMLgQNdFPFVPAQqqYQMogsc2v7bCnRBEZTbzXJFhvzfnj8skv/okrjQ3DipAwcExEJBDMourWtsXnTlyA7Adx
                tNj/S2nSBPQStsSgxzF+MCMGCSqGSIb3DQEJFTEWBBTPMkEuyxrUuidTCTAgT/SAcc0bVzBXBgkqhkiG9w0BCRQxSh5IAEEAcABw
                AGwAZQAgAFAAdQBzAGgAIABTAGUAcgB2AGkAYwBlAHMAOgAgAGMAbwBtAC4AZQB4AGEAbQBwAGwAZQAuAGEAcABwMEEwMTANBglg
                hkgBZQMEAgEFAAQgVK2LMJPq8wG72O6SBBbGmPhXSaHrXoz1+tMxh8JafCQECH0FuM6xF9iLAgIIAA==
            """, options: .ignoreUnknownCharacters)!)
    /// `client-nokey.p12`: the certificate alone (`-nokeys`).
    static let pkcs12WithoutKey = [UInt8](
        Data(
            base64Encoded: """
                MIIE9wIBAzCCBK0GCSqGSIb3DQEHAaCCBJ4EggSaMIIEljCCBJIGCSqGSIb3DQEHBqCCBIMwggR/AgEAMIIEeAYJKoZIhvcNAQcB
                MFcGCSqGSIb3DQEFDTBKMCkGCSqGSIb3DQEFDDAcBAjAgfUwo+zUOAICCAAwDAYIKoZIhvcNAgkFADAdBglghkgBZQMEASoEEPfr
                S22/AH7LlK2IM8IeQVmAggQQiBkL4U1epiGeAoxMFumo08+j0Z8q7rxuFUKu1bQoONK1PJ0O1V11DDVUmndFty2hA4oJqm9pA4qw
                pPkyOQs3SelCqiWq+WexuqzbmMpnHED/8PxUJJZCsfgYIV8d3xfA+L7wZvRo1OdY19TRM4vD6eMdhJy0tTtPH8EL34Nnyjdl8AB5
                K6GjPnQ5kQT98EI3ef4Lc+2VaKZ2GQ98ZlGYA6w6OF4tNcZDlu/QImfVvYyz7MkCf7VkECst8pelpig6oRu3gI+YESARlTZqQkaG
                60VRmTaO6YUYvShSbYiBcAn8pbxIcbdAmn84jnhSwvA4SQhIq64XoSgOfw/7EFDuSpwDopDo89PJZynVTsQTBkZUMwIqOV0CeElj
                dinXrGsioQlfrtQBuEkp3G9LFiZ8wf6Bw6OGq95w0VSZCWY+pD3OIrCzkbVZ3+m5xy7Bu73YR0liKepgOGbCATVHSf0y0PrcqTKk
                HGw9e7EhaBmOQAPPqy1FQg9RaEGSSivD0W2Bo1I+bu56ZGcGp5XnNYIy19oIFthEFPR4rNZRhxpi4uLkQMonDGiOY/wjVMQ57eCv
                5ulksak34piDaGwvNM9lUBZ4xD12oYIDWjfIMQwuLRNXWmc6kzDmqAjgpAbhGPtJk0k9jJBB+NSM317MiQPWNvhAhl7aqtmi3TPM
                z4TMQuBKSPKimjswC3GTel6y+cN2+bqJo1vhaHOijoiZvc4CjHj27ya1epFToXLd+oCitwAUdnDplCK254hipk/aSIg7IGDP8JUN
                HiV0tgCzxq/W4bZkpg+lyCUgwDlI4tHfkaUkamN/dNlgtVQJh5OXwNThDiQtPZn0vGc8+nLgfMoCbDWndEaDrEyH5LTynqEYdkSW
                jHTwOAXHxpOjMJ/WkIp5iThQedKqB0EL4r+GmBFsjCWNsJwkG4Rl//fMC431UkZLntYxvQMiP0ow3qsukqMtCRPIBP/C1KR7AuTJ
                5MS5dC48X6PzwlVs/5+078gfp+tzKN2nlUraoLqELzxzOfmaOGFZC/dQGJ7ae+u9I2w7eXFiqEPUg3QVlYxkQ4xLs8JTYzB0UKux
                yRpF/fYjageJQG89CQ4JjPxlrl1TNSc2JAusNhi1JKLAlHJXxup0VowlMrpv3e9u4QRd91lqAydswXqoZv4jVeoL5XwxcV/f1fPX
                D/CBGm79ESJ9U0uufdzyusdulaCu8YP+X9UJknDDDGCq2VBdxx0M8LdZbk1It19dotRX9dNyfccLWPKUV7r2IhL9l1wqpaD6QcjE
                wlxWTwQ47pW6aJp5wz2h9H+4gJ29TUaxKVnPo5gD049hgqeLARCzZj/lVEDODJ9052xlbEXMERsq7bssyzMc6F99Dv38PYM7Ac/z
                z0aXYPwnb94wQTAxMA0GCWCGSAFlAwQCAQUABCAtO7PYuHml9UzPDi3tZwTou2ocnS3vvgkgSib21uCdoQQI8Xdqt3G+zIgCAggA
            """, options: .ignoreUnknownCharacters)!)
    /// `client-nocert.p12`: the key alone (`-nocerts`).
    static let pkcs12WithoutCertificate = [UInt8](
        Data(
            base64Encoded: """
                MIIFwgIBAzCCBXgGCSqGSIb3DQEHAaCCBWkEggVlMIIFYTCCBV0GCSqGSIb3DQEHAaCCBU4EggVKMIIFRjCCBUIGCyqGSIb3DQEM
                CgECoIIFMTCCBS0wVwYJKoZIhvcNAQUNMEowKQYJKoZIhvcNAQUMMBwECLAGXza1+Cr4AgIIADAMBggqhkiG9w0CCQUAMB0GCWCG
                SAFlAwQBKgQQv0mZ+D1j9DtvkhWloRLMLQSCBNCuakR6FgApJL2WLM56WuaCBwGXyYqiek5ua//wIkGgAUVgMXG/Hn/VjMs31WfC
                x0piU6uUVYZYfBlUOmziXIMnJ+6ErrYIIcL87Fj3Wj4Cw8V5GQgwakRNsEmieZ0OB0V5ldQkNOJmh87NRS8QpPFLxdkgXVPsMiV9
                RkazObGW2X+6itwFYpWckOlJ0pfcv3Gx6ktU8G5EZW64JLgyJmTy+Esr603M7qTgc0M/RkdYNqk9HivADSFj2U8rL/V6CsKZUIEb
                4vhEAHGeQGJbidxqLNOLaPap2Wkhcq7rKIrlvJokLDgvePgg7NTfjhSMhwQD8p+++6r+S/O9FBxwuiVKruMLH2CMPma/ZazZZMBp
                TZGb//pNtg15VjqxRCVWqE+feW2TrC6j8NlIsGOPFff5gCXGYnTILPCnChhr7GMpFfpDZscru7VJN5lJX9q+i3ipNAeDhJXqLLRQ
                MxPSin89XQA5wdH4mmrg6cZKZwpuBgWTFW6CrHjgLrYL2iwRHIDRe1Zqx2PVwKXPQTzpF96Z7oAUvSjGcZITlDe8FxnnBaTV6SpT
                AKYrIHf/TrOxni6Pr4WJR+6d/DcDpIQ9xoyxWAH4+VkKOcfZb1g/54JfVd0DkivX3SrntUIJ6/YcVVUBycCF/RJu+8MabupLg/vr
                +Z82TXOG5fjCmZW+fyOgTbYegaYCyCWmnvI7yyRQnRTzTD92LyGXVpTbvPu8lL0Z/xN3U2dsPa8qCRg6cYiCboXvwC0vwpEYKmPy
                2MqmGa/pbdXk5az2+kwYWw58teTsk0yWfvhZ7pSmjC5Fnis8mKbEgfPtmHsLa1Pt4iNag1eas1xkIUbmrmaZlBG9tQdEAdW9nWIr
                8CD4jtFey4WXsiLq0uuMBrdFVNAKhUjkBrBokvcSXZZ+aJpTngkvNlFU8ptQTgVBnZjTWy9ExmXzGx+SrVL2K1zSchfvyw7Kf6zx
                /gysVNSEUNKsTKpTa9CsBDjNW13EXJJaYejcx76gg9JHmIAj+6qmDFdbdzJ/ny6v0chK2Ev/KnZcB2EYoL6cBXGVWILWUvLU9CVw
                DFz1kL4pdPTLhlfWv47DFb+K7UmL4dki5rl1XZrOcbeg0qp4UrwGHPhHAz6JXqpToRUIGWTUwhUzehhmDoT3/SwU7wk4lSq3TWIT
                Ftut9b+7jdm6CxbzjVqI3TL5c5g9/tbkHnZE4p50hYOl6M41ENgEB/17R95xIW5kIyUHTWET1Cw2DPp5EX5G2ip2LTpFHIOMQj6f
                jQoN+8+Fe1/Y/7UUC3mV0HRoP83XEllVupijCq1Xq+3jqZ9AirJTPdZLTX66KEgf2XfX2kTyWzKQfUnROZrOII17TflNjddMBh3G
                Q5HpZSNinsuEHlj9M8f8cSLvjkIfSj5olaeeFhp5G9N7Q2ZvTVOX+5Oi8KYwBIa+jS1mx1dVMZ6+AGj9JORvVXuWUzNsaup3fwDy
                CcneVcYgM37QGlJJr1yOQ2OyeCT0/cKDG0aS2I2BWkp518M4zs9zzdM3ozLyVR5DndWCgaZnuEiIuYptn4w6qLexAIvjQqmUacxW
                FCJVHrNX0uszdjALjWj5avBBW6J/W/xK6f+yVH7OZLQsJ+LASwd8/TeC9tkA7g/yo5Vh6cFhE3z6luDkezBBMDEwDQYJYIZIAWUD
                BAIBBQAEIDyBL6bXoG4moLY0/LHzVvJ4+g3u6ILuV0rersI6UECkBAjCc7mYiKbqCwICCAA=
            """, options: .ignoreUnknownCharacters)!)
}
