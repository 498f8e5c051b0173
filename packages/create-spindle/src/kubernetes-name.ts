// Kubernetes is stricter than npm: a Service's name must be a DNS-1035 label (a-z, 0-9
// and '-', starting with a letter and ending with a letter or digit, at most 63
// characters), and the other objects' names and the `app` label take any such label too.
// An npm name such as `my_app`, `1app` or `my.app`, or one longer than 63, is none of those.
const MAX_LENGTH = 63

/**
 * The project's name for Kubernetes objects, their `app` label and the Docker image the
 * Deployment runs (a DNS-1035 label is also a valid image name): `my_app` → `my-app`.
 */
export function kubernetesName (name: string): string {
  const label = name.toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^[^a-z]+/, '')
    .slice(0, MAX_LENGTH)
    .replace(/-+$/, '')
  return label === '' ? 'app' : label
}
