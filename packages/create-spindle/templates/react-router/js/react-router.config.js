export default { ssr: true }
